// The "Connections side by side" section of docs/benchmarks.md (bench/connections.ts measures it).

import type { ConnectionsResult } from "../connections.ts";
import { ms } from "./stats.ts";

export const CONNECTIONS_HEADING = "## Connections side by side: a big first sync and everyone else";

export function renderConnectionsSection(r: ConnectionsResult): string[] {
  const o = r.options;
  const row = (what: string, idle: string, during: string, ratio: string) =>
    `| ${what} | ${idle} | ${during} | ${ratio} |`;
  const x = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(2)}×` : "—");
  return [
    CONNECTIONS_HEADING,
    "",
    `The embedded default (\`main.ts\` as a child process, PGlite, its own Temporal dev server), \`MAX_DOCUMENTS_IN_FLIGHT=${o.inFlight}\`,`,
    `\`EMBEDDING_THREADS=${o.threads}\`${Object.entries(o.env)
      .map(([k, v]) => `, \`${k}=${v}\``)
      .join(
        "",
      )}; a real S3-compatible server (s3rver) on loopback. Connection "archive" holds ${o.big.toLocaleString("en")}`,
    `200-word texts, connection "desk" ${o.small}. The desk's incremental sync (${o.changes} new files, then \`POST /v3/connections/:id/sync\`)`,
    `and ${o.adds} single \`POST /v3/documents\` adds are timed on the idle service, then again once the archive's first sync`,
    `has saved ${o.backlog.toLocaleString("en")} documents that wait for a slot.`,
    "",
    "| | idle | during the archive's first sync | ratio |",
    "|---|---|---|---|",
    row(
      `desk incremental sync, ${o.changes} files: request → all done`,
      ms(r.idle.syncMs),
      ms(r.during.syncMs),
      x(r.during.syncMs, r.idle.syncMs),
    ),
    row(
      `single add, queued → done: p50 / max of ${o.adds}`,
      `${ms(r.idle.addToDone.p50)} / ${ms(r.idle.addToDone.max)}`,
      `${ms(r.during.addToDone.p50)} / ${ms(r.during.addToDone.max)}`,
      x(r.during.addToDone.p50, r.idle.addToDone.p50),
    ),
    row("archive documents waiting ahead of them", "0", r.during.bigWaiting.toLocaleString("en"), ""),
    "",
    `- The desk's first sync of ${o.small} files took ${ms(r.firstSmallSyncMs)} on the idle service.`,
    `- When the phases ended, ${ms(r.bigElapsedMs)} into its first sync, the archive had saved ${r.bigSaved.toLocaleString("en")} of`,
    `  ${o.big.toLocaleString("en")} files and finished (done or failed) ${r.bigDone.toLocaleString("en")}.`,
    `- Deleting the archive connection with its documents: ${ms(r.deleteMs)}; ${r.leftAfterDelete} of its documents left 5 s later.`,
    `- The daemon's peak RSS over the run: ${Math.round(r.peakRssMiB)} MiB.`,
    "",
  ];
}
