// The "## Bulk imports" section of docs/benchmarks.md and the terminal summary of bench/bulk.ts.
// Every sentence that states a finding is built from the figures of the run it describes.

import type { BacklogRun, BulkResult, ImportRun, LatencyKind } from "../bulk.ts";
import type { ProcessCpu } from "./proc.ts";
import { machine } from "./report.ts";
import { ms, rate, type Summary } from "./stats.ts";

export const BULK_HEADING = "## Bulk imports";

const mib = (bytes: number) => (bytes > 0 ? `${(bytes / 2 ** 20).toFixed(0)} MiB` : "n/a");
const sec = (v: number) => (Number.isFinite(v) ? `${(v / 1000).toFixed(1)} s` : "n/a");
const cores = (v: number) => (Number.isFinite(v) ? v.toFixed(2) : "n/a");
const times = (a: number, b: number) =>
  Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}×` : "n/a";
const pct = (a: number, b: number) =>
  Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${((100 * a) / b).toFixed(0)} %` : "n/a";
const n = (v: number | undefined) =>
  v === undefined || !Number.isFinite(v) ? "n/a" : v.toLocaleString("en");
const duration = (msValue: number) => {
  const s = msValue / 1000;
  if (s >= 3600) return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
  if (s >= 60) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${s.toFixed(0)} s`;
};

/** The 200-document import (or the smallest) that every other size is compared with. */
function baseline(r: BulkResult): ImportRun | undefined {
  if (!r.options.scenarios.includes("rates")) return undefined;
  const complete = r.imports.filter((i) => i.outcome === "complete" && !i.singles);
  return complete.find((i) => i.size === 200) ?? [...complete].sort((a, b) => a.size - b.size)[0];
}

/** The embedder's chunks/s on the chunks of this import (its own prefix when measured, else the whole sample). */
function embedderFor(r: BulkResult, size: number): { perSecond: number; on: string } | undefined {
  const e = r.embedder;
  if (!e) return undefined;
  const own = e.prefixes.find((p) => p.documents === size);
  if (own) return { perSecond: own.chunksPerSecond, on: `its own ${n(own.chunks)} chunks` };
  return { perSecond: e.chunksPerSecond, on: `the first ${n(e.documents)} documents' ${n(e.chunks)} chunks` };
}

/** The import's size, and how its documents were sent when not in batches. */
const sizeLabel = (i: ImportRun) =>
  i.singles ? `${n(i.size)} one at a time (${"`"}POST /v3/documents${"`"})` : n(i.size);

function cpuRow(label: string, c: ProcessCpu | undefined): string {
  if (!c) return `| ${label} | n/a | n/a | n/a | n/a | n/a | n/a | n/a |`;
  const service = c.serviceMain + c.serviceBusiest + c.serviceOther;
  return `| ${label} | ${cores(c.serviceMain)} | ${cores(c.serviceBusiest)} | ${cores(c.serviceOther)} | ${cores(service)} | ${cores(c.temporalServer)} | ${cores(c.bench)} | ${cores(c.otherProcesses)} / ${cores(c.steal)} |`;
}

const latencyCells = (s: Summary) => `${ms(s.p50)} | ${ms(s.p95)} | ${ms(s.max)}`;

function outcomeCell(i: ImportRun): string {
  return i.outcome === "complete" ? "complete" : `**${i.outcome.toUpperCase()}** (partial figures)`;
}

function loadImport(r: BulkResult): ImportRun | undefined {
  return r.imports.find((i) => i.load || i.tenant);
}

/** Sentences about the figures (none is written unless the figures it needs were measured). */
function meaning(r: BulkResult): string[] {
  const out: string[] = [];
  const base = baseline(r);
  const others = r.imports.filter((i) => base && i !== base && i.outcome === "complete" && !i.singles);
  if (base && others.length) {
    const parts = others.map((i) => `${times(i.docsPerSecond, base.docsPerSecond)} at ${n(i.size)}`);
    const ratios = others.map((i) => i.docsPerSecond / base.docsPerSecond);
    const low = Math.min(...ratios);
    const high = Math.max(...ratios);
    const trend =
      low >= 0.8 && high <= 1.25
        ? "so the rate held within 20 % of the small import's as the import grew"
        : low < 0.8
          ? `so a larger import ran slower per document (down to ${(100 * low).toFixed(0)} % of the ${n(base.size)}-document rate): the cost per document grows with the backlog`
          : "so larger imports ran faster per document (fixed costs spread over more documents)";
    out.push(
      `- **Scaling.** Documents/s relative to the ${n(base.size)}-document import: ${parts.join(", ")}, ${trend}.`,
    );
  }
  for (const single of r.imports.filter((i) => i.singles && i.outcome === "complete")) {
    const batched =
      r.imports.find((i) => !i.singles && i.size === single.size && i.outcome === "complete") ?? base;
    if (batched)
      out.push(
        `- **One document per request.** ${n(single.size)} documents sent one at a time (${r.options.singlesInFlight} requests in flight, as \`npm run cli -- add\` and an SDK loop send them) ran at ${rate(single.docsPerSecond)} documents/s, ${times(single.docsPerSecond, batched.docsPerSecond)} of the ${n(batched.size)}-document batch import.`,
      );
  }
  const withEmbedder = r.imports
    .map((i) => ({ i, e: embedderFor(r, i.size) }))
    .filter((x) => x.e && x.i.embeddedChunks > 0);
  if (withEmbedder.length) {
    const shares = withEmbedder.map((x) => x.i.chunksPerSecond / (x.e?.perSecond ?? Number.NaN));
    const lo = Math.min(...shares);
    const hi = Math.max(...shares);
    const range =
      lo === hi ? `${(100 * lo).toFixed(0)} %` : `${(100 * lo).toFixed(0)}–${(100 * hi).toFixed(0)} %`;
    const verdict =
      lo >= 0.9
        ? "the imports ran at the embedder's speed: the model was the limit"
        : hi < 0.9
          ? `the rest of the pipeline (store writes, Temporal hand-overs, status updates) cost ${(100 * (1 - hi)).toFixed(0)}–${(100 * (1 - lo)).toFixed(0)} % of the model's speed`
          : "some imports reached the embedder's speed and others did not";
    out.push(
      `- **Against the embedder.** The pipeline embedded ${range} of the chunks per second the model manages alone on the same chunks, so ${verdict}.`,
    );
  }
  const li = loadImport(r);
  if (li?.load) {
    for (const k of li.load) {
      const errors = k.connectionErrors + k.serverErrors + k.otherNon2xx;
      out.push(
        `- **${k.kind} during the ${n(li.size)}-document import**: p95 ${ms(k.latency.p95)} against ${ms(k.idle.p95)} on the idle service (${times(k.latency.p95, k.idle.p95)}), max ${ms(k.latency.max)}, ${errors ? `**${errors} failed** of ${k.requests}` : `all ${k.requests} answered 2xx`}.`,
      );
    }
  }
  const t = li?.tenant;
  if (t && li) {
    const ahead = li.docsPerSecond > 0 ? (t.bigUnfinished * 1000) / li.docsPerSecond : Number.NaN;
    const served =
      !Number.isFinite(t.allDoneMs) || !Number.isFinite(ahead) || t.bigUnfinished <= 0
        ? undefined
        : t.allDoneMs < 0.5 * ahead
          ? "so it was served alongside the import, not behind it"
          : t.allDoneMs >= 0.8 * ahead
            ? "so it waited behind the import's backlog"
            : "so it waited behind part of the import's backlog";
    out.push(
      `- **The small tenant** had ${n(t.documents)} documents done ${sec(t.allDoneMs)} after submitting them${t.afterImport ? " (the big import had already finished, so nothing was ahead of it)" : ` with ${n(t.bigUnfinished)} documents of the big import unfinished; working through those at the import's rate takes about ${sec(ahead)}`}${served ? `, ${served}` : ""}.`,
    );
  }
  const b = r.backlog;
  if (b) {
    const grew = b.peakRss.service - b.idleRss.service;
    out.push(
      `- **Backlog memory.** With ${n(b.accepted)} documents submitted the service peaked at ${mib(b.peakRss.service)} resident, ${mib(grew)} above its idle ${mib(b.idleRss.service)} (≈ ${b.accepted ? (grew / b.accepted / 1024).toFixed(1) : "n/a"} KiB per submitted document); the Temporal dev server peaked at ${mib(b.peakRss.temporal)} from ${mib(b.idleRss.temporal)}.`,
    );
    out.push(
      `- **Deleting the backlog** took ${sec(b.deleteMs)} (${b.deleteStatus}); right after it ${n(b.workflowsAfter)} processing workflows were still running${b.drainMs !== undefined ? `, none after ${sec(b.drainMs)}` : `, ${n(b.workflowsAtEnd)} still after ${sec(r.options.drainMs)}`}; the service ${b.healthyAfter ? "answered /health afterwards" : "**did not answer /health** afterwards"}.`,
    );
  }
  const incomplete = r.imports.filter((i) => i.outcome !== "complete");
  if (incomplete.length) {
    out.push(
      `- **Not complete:** ${incomplete.map((i) => `the ${n(i.size)}-document import (${i.outcome})`).join(", ")}; its figures cover only what finished before it was ended.`,
    );
  }
  return out;
}

export function renderBulkSection(
  r: BulkResult,
  meta: { started: Date; command: string; revision: string },
): string {
  const m = machine();
  const o = r.options;
  const settings = Object.entries(r.serviceSettings)
    .map(([k, v]) => `${k}=${v}`)
    .join(", ");
  const out: string[] = [];
  const push = (...lines: string[]) => out.push(...lines);
  push(
    BULK_HEADING,
    "",
    `Measured ${meta.started.toISOString()} on ${m.cpu} (${m.cores} cores, ${m.memory}), Node ${m.node}, ${m.os}, code ${meta.revision}, with \`${meta.command}\` (${duration(r.totalMs)} for this part).`,
    "",
    `Set-up: the service as a child process, \`node --import tsx main.ts\` (what \`npm start\` runs: API, worker, embedding model and PGlite in one Node process) with a fresh temporary DATA_DIR, against a fresh Temporal dev server started by the benchmark, **a new pair for every import** (no rows, workflows or caches carried from one size to the next). Service settings: ${settings || "defaults"}. Documents: ${r.documentsPerSizeWords}-word SciFact abstracts (as in the ingestion section; past the corpus's 5,183 they repeat with a "(copy k)" suffix), chunked at CHUNK_MAX_CHARS=${r.chunking.maxChars}. All of an import's documents go through \`POST /v3/documents/batch\`, ${o.batch} per request, ${o.inFlight} requests in flight, sent as fast as the API answers, into one container tag, after one warm-up document. The clock runs from the first add to the last \`done\`/\`failed\` in the documents' \`statusHistory\` (read from the store after the service stopped). Resident memory is the service process's VmRSS (the benchmark's own memory is not in it) and the Temporal dev server's, sampled every second.`,
    "",
  );

  const base = baseline(r);
  if (r.imports.length) {
    push(
      "### Import rate by size",
      "",
      "| documents | chunks embedded / expected | adds answered after | first add → last finished | **documents/s** | **chunks/s** | documents/s vs " +
        `${base ? n(base.size) : "baseline"} | chunks/s vs ${base ? n(base.size) : "baseline"} | embedder alone, chunks/s | **pipeline ÷ embedder** | add→done p50 / p95 | done / failed / rejected | peak RSS service / Temporal | outcome |`,
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
      ...r.imports.map((i) => {
        const e = embedderFor(r, i.size);
        const during = i.load || i.tenant ? " ¹" : "";
        return `| ${sizeLabel(i)}${during} | ${n(i.embeddedChunks)} / ${n(i.chunksExpected)} | ${sec(i.acceptMs)} | ${sec(i.wallMs)} | **${rate(i.docsPerSecond)}** | **${rate(i.chunksPerSecond)}** | ${base ? times(i.docsPerSecond, base.docsPerSecond) : "n/a"} | ${base ? times(i.chunksPerSecond, base.chunksPerSecond) : "n/a"} | ${e ? rate(e.perSecond) : "n/a"} | **${e ? pct(i.chunksPerSecond, e.perSecond) : "n/a"}** | ${ms(i.addToDone.p50)} / ${ms(i.addToDone.p95)} | ${n(i.done)} / ${n(i.failed)} / ${n(i.rejected)} | ${mib(i.peakRss.service)} / ${mib(i.peakRss.temporal)} | ${outcomeCell(i)} |`;
      }),
      "",
    );
    const li = loadImport(r);
    if (li)
      push(
        `¹ This import also served the interactive requests${li.tenant ? ` and the second tenant's ${n(li.tenant.documents)} documents` : ""} below, so its rate includes that work.`,
        "",
      );
    if (r.embedder) {
      const e = r.embedder;
      push(
        `Embedder alone: ${e.model} with ${e.threads} thread${e.threads > 1 ? "s" : ""}, in this benchmark's process before any service ran, on the chunks of the first ${n(e.documents)} documents (${n(e.chunks)} chunks) in calls of 32 texts after a warm-up: ${rate(e.chunksPerSecond)} chunks/s over ${sec(e.ms)}${e.prefixes.length ? `; on the chunks of the first ${e.prefixes.map((x) => `${n(x.documents)} documents ${rate(x.chunksPerSecond)}`).join(", ")} chunks/s` : ""}. Each import is compared with the rate on its own chunks where that was measured, else with the whole sample (\`--bulk-embedder-docs\` sets its size).`,
        "",
      );
    }
    push(
      "Service start (store, embedder, worker, API) / warm-up document: " +
        r.imports.map((i) => `${n(i.size)}: ${sec(i.serviceStartMs)} / ${sec(i.warmupMs)}`).join("; ") +
        ". Batch add requests (500 documents each), p50 / max: " +
        r.imports.map((i) => `${n(i.size)}: ${ms(i.addRequest.p50)} / ${ms(i.addRequest.max)}`).join("; ") +
        ".",
      "",
    );
    const notes = r.imports.flatMap((i) => [
      ...i.notes.map((x) => `- ${n(i.size)} documents: ${x}`),
      ...i.addFailures.slice(0, 3).map((x) => `- ${n(i.size)} documents, add failure: ${x}`),
    ]);
    if (notes.length) push("Notes:", "", ...notes, "");
    push(
      "CPU in cores (1.00 = one core busy for the whole import; this machine has " +
        `${m.cores}), per thread of the service process from /proc; "busiest" are its ${o.threads} busiest threads besides the main one (the embedding model's while it runs):`,
      "",
      "| phase | service main thread | service busiest | service other threads | service total | Temporal server | benchmark process | other processes / steal |",
      "|---|---|---|---|---|---|---|---|",
      ...(r.embedder?.cpu
        ? [
            `| Embedder alone (in the benchmark process) | – | – | – | – | ${cores(r.embedder.cpu.temporalServer)} | ${cores(r.embedder.cpu.mainThread + r.embedder.cpu.busiestOtherThreads + r.embedder.cpu.otherThreads)} | ${cores(r.embedder.cpu.otherProcesses)} / ${cores(r.embedder.cpu.steal)} |`,
          ]
        : []),
      ...r.imports.map((i) => cpuRow(`Import of ${sizeLabel(i)}`, i.cpu)),
      ...(r.backlog
        ? [
            cpuRow(`Backlog of ${n(r.backlog.documents)}: submit + watch`, r.backlog.cpuSubmitWatch),
            cpuRow(`Backlog of ${n(r.backlog.documents)}: delete + drain`, r.backlog.cpuDelete),
          ]
        : []),
      "",
    );
  }

  const li = loadImport(r);
  if (li?.load) {
    push(
      `### Interactive requests during the ${n(li.size)}-document import`,
      "",
      `From the first add until the import finished, every ${(o.loadEveryMs / 1000).toFixed(1)} s one request of each kind, the kinds staggered by a third of that, each kind on its own keep-alive connection (so none waits behind another in the client): \`POST /v3/search\` (a SciFact query over the importing tag, limit 10), \`POST /v4/search\` (memory search in another tag, limit 10) and \`POST /v4/memories\` (one memory into that tag). A request still running when its next one is due delays it; the slots it covered are skipped and counted. "Idle" is ${5} requests of each kind one after another on the warm service just before the import.`,
      "",
      "| kind | requests | p50 | p95 | max | idle p50 | idle p95 | connection errors | 5xx | other non-2xx | skipped slots |",
      "|---|---|---|---|---|---|---|---|---|---|---|",
      ...li.load.map(
        (k: LatencyKind) =>
          `| ${k.kind} | ${k.requests} | ${latencyCells(k.latency)} | ${ms(k.idle.p50)} | ${ms(k.idle.p95)} | ${k.connectionErrors} | ${k.serverErrors} | ${k.otherNon2xx} | ${k.missedSlots} |`,
      ),
      "",
    );
    const failures = li.load.flatMap((k) => k.failures.map((f) => `- ${k.kind}: ${f}`));
    if (failures.length) push("First failures:", "", ...failures, "");
  }
  if (li?.tenant) {
    const t = li.tenant;
    push(
      `### A small tenant during the ${n(li.size)}-document import`,
      "",
      `${t.afterImport ? "After the import had finished" : `${sec(t.submittedAtMs)} after the import's first add`}, another container tag sent ${n(t.documents)} documents in one \`POST /v3/documents/batch\` (answered in ${ms(t.answerMs)}).`,
      "",
      "| measure | value |",
      "|---|---|",
      `| big import's documents unfinished at submission | ${n(t.bigUnfinished)} |`,
      `| submission → last of the ${n(t.documents)} finished | **${sec(t.allDoneMs)}** |`,
      `| per document add → done, p50 / max | ${ms(t.addToDone.p50)} / ${ms(t.addToDone.max)} |`,
      `| done / failed | ${t.done} / ${t.failed} |`,
      `| outcome | ${t.outcome} |`,
      "",
    );
  }

  const b: BacklogRun | undefined = r.backlog;
  if (b) {
    push(
      `### A ${n(b.documents)}-document backlog: memory, then deleting it`,
      "",
      `A fresh service; after a warm-up document and 5 s of rest, ${n(b.documents)} documents submitted as above (${n(b.accepted)} accepted in ${sec(b.acceptMs)}), then watched for ${sec(b.watchMs)} while processing went on; then \`DELETE /v3/documents/bulk {containerTags}\` for the tag.`,
      "",
      "| measure | service process | Temporal dev server |",
      "|---|---|---|",
      `| resident memory, idle (after the warm-up) | ${mib(b.idleRss.service)} | ${mib(b.idleRss.temporal)} |`,
      `| **peak** from the first add to the end of the watch (sampled every second) | **${mib(b.peakRss.service)}** | **${mib(b.peakRss.temporal)}** |`,
      `| at the end of the watch | ${mib(b.beforeDeleteRss.service)} | ${mib(b.beforeDeleteRss.temporal)} |`,
      `| after the delete and the drain | ${mib(b.afterDrainRss.service)} | ${mib(b.afterDrainRss.temporal)} |`,
      "",
      "| measure | value |",
      "|---|---|",
      `| documents finished / still \`queued\` / in progress at the end of the watch | ${n(b.finishedAtEnd)} / ${n(b.queuedAtEnd)} / ${n(b.inProgressAtEnd)} |`,
      `| processDocument workflows running before the delete | ${n(b.workflowsBeforeDelete)} |`,
      `| **delete took** (status, deletedCount) | **${sec(b.deleteMs)}** (${b.deleteStatus}, ${n(b.deletedCount)}) |`,
      `| right after: \`GET /v3/documents/processing\` totalCount${b.processingAfter === 500 ? " (the route lists at most 500)" : ""} / documents left with the tag / workflows running | ${n(b.processingAfter)} / ${n(b.taggedLeft)} / ${n(b.workflowsAfter)} |`,
      `| until no processDocument workflow was running | ${b.drainMs !== undefined ? sec(b.drainMs) : `not within ${sec(o.drainMs)} (${n(b.workflowsAtEnd)} left)`} |`,
      `| \`GET /v3/documents/processing\` totalCount at the end | ${n(b.processingAtEnd)} |`,
      `| service answered /health afterwards | ${b.healthyAfter ? "yes" : "**no**"} |`,
      "",
    );
    if (b.notes.length) push("Notes:", "", ...b.notes.map((x) => `- ${x}`), "");
  }

  const lines = meaning(r);
  if (lines.length) push("### What the bulk figures mean", "", ...lines, "");
  push(
    "How to run this part alone: `npm run bench -- --only bulk` (all parts at the default sizes); `--bulk-scenarios rates|load|tenant|backlog` (comma-separated) picks scenarios, `--bulk-sizes 200,2000,5000,20000` the sizes, `--bulk-backlog N` the backlog; `npm run bench -- --help` lists the rest.",
    "",
  );
  return out.join("\n");
}

export function bulkSummaryLines(r: BulkResult): string[] {
  const lines: string[] = [`Bulk imports (${duration(r.totalMs)}):`];
  const base = baseline(r);
  if (r.embedder)
    lines.push(
      `  embedder alone (${r.embedder.model}): ${rate(r.embedder.chunksPerSecond)} chunks/s on ${n(r.embedder.chunks)} chunks`,
    );
  for (const i of r.imports) {
    const e = embedderFor(r, i.size);
    lines.push(
      `  ${sizeLabel(i)} documents: ${rate(i.docsPerSecond)} docs/s, ${rate(i.chunksPerSecond)} chunks/s over ${sec(i.wallMs)}` +
        ` (vs ${base ? n(base.size) : "?"}: ${base ? times(i.docsPerSecond, base.docsPerSecond) : "n/a"}; pipeline ÷ embedder ${e ? pct(i.chunksPerSecond, e.perSecond) : "n/a"})` +
        `, ${i.done} done, ${i.failed} failed, ${i.rejected} rejected, peak RSS ${mib(i.peakRss.service)}, ${i.outcome}`,
    );
  }
  const li = loadImport(r);
  for (const k of li?.load ?? []) {
    lines.push(
      `  ${k.kind} during the ${n(li?.size)} import: ${k.requests} requests, p50 ${ms(k.latency.p50)}, p95 ${ms(k.latency.p95)}, max ${ms(k.latency.max)} (idle p95 ${ms(k.idle.p95)}); errors: ${k.connectionErrors} connection, ${k.serverErrors} 5xx, ${k.otherNon2xx} other non-2xx`,
    );
  }
  if (li?.tenant) {
    const t = li.tenant;
    lines.push(
      `  small tenant: ${t.documents} documents done ${sec(t.allDoneMs)} after submission, with ${n(t.bigUnfinished)} of the import unfinished (${t.outcome})`,
    );
  }
  const b = r.backlog;
  if (b) {
    lines.push(
      `  backlog of ${n(b.documents)}: peak RSS ${mib(b.peakRss.service)} (idle ${mib(b.idleRss.service)}), Temporal ${mib(b.peakRss.temporal)}; ${n(b.queuedAtEnd)} still queued after ${sec(b.watchMs)}; delete ${sec(b.deleteMs)} (${b.deleteStatus}); workflows right after ${n(b.workflowsAfter)}, drained ${b.drainMs !== undefined ? `after ${sec(b.drainMs)}` : "not in time"}`,
    );
  }
  for (const line of meaning(r)) lines.push(`  ${line.replace(/\*\*/g, "")}`);
  return lines;
}
