// The "Ingestion throughput" and "Machine load during the measurements" sections of docs/benchmarks.md.

import type { IngestResult } from "../ingest.ts";
import type { SearchResult } from "../search.ts";
import type { CpuShares } from "./cpu.ts";
import { cores, machine, measuredPhases, OTHER_LOAD_WARNING } from "./report.ts";
import { ms, rate, ratio, type Summary } from "./stats.ts";

export const INGEST_HEADING = "## Ingestion throughput";
export const LOAD_HEADING = "## Machine load during the measurements";

const row = (label: string, s: Summary) =>
  `| ${label} | ${ms(s.p50)} | ${ms(s.p95)} | ${ms(s.mean)} | ${ms(s.max)} | ${s.n} |`;
const seconds = (v: number) => `${(v / 1000).toFixed(1)} s`;

function cpuRow(label: string, c: CpuShares | undefined): string {
  if (!c) return `| ${label} | n/a | n/a | n/a | n/a | n/a | n/a |`;
  const total =
    c.mainThread +
    c.busiestOtherThreads +
    c.otherThreads +
    (Number.isFinite(c.temporalServer) ? c.temporalServer : 0);
  return `| ${label} | ${cores(c.mainThread)} (event loop busy ${(100 * c.mainEventLoop).toFixed(0)} %) | ${cores(c.busiestOtherThreads)} | ${cores(c.otherThreads)} | ${cores(c.temporalServer)} | ${cores(total)} |`;
}

export function renderIngestSection(i: IngestResult): string[] {
  const m = machine();
  const out: string[] = [];
  const p = (...lines: string[]) => out.push(...lines);
  p(
    INGEST_HEADING,
    "",
    `Set-up: the embedded default, i.e. PGlite in a temporary DATA_DIR, a Temporal dev server started by the benchmark on free ports, the real worker and API in the benchmark's process, EMBEDDING_THREADS=${i.threads}, the embedder the service picks by default (named in the search section); the SDK \`supermemory\` talks to the API over HTTP on 127.0.0.1.`,
    "",
  );
  p(
    `${i.docs} documents of ${i.wordsPerDoc} words (SciFact abstracts, trimmed or padded with the next abstract's words), added through \`client.documents.batchAdd\` in batches of 50 with 4 requests in flight, timed from just before the first add until the last document reached \`done\` (the latest \`done\` in the documents' \`statusHistory\`). One warm-up document went through the pipeline before the clock started.`,
    "",
    "| Measure | Value |",
    "|---|---|",
    `| Documents done / failed | ${i.docs - i.failed} / ${i.failed} |`,
    `| Chunks stored (embedded) / expected from the chunker at CHUNK_MAX_CHARS=${i.chunkMaxChars} | ${i.storedChunks} (${i.embeddedChunks}) / ${i.expectedChunks} |`,
    `| All add requests answered after | ${seconds(i.acceptMs)} |`,
    `| First add → last \`done\` | ${seconds(i.wallMs)} |`,
    `| **Pipeline throughput** | **${rate(i.docsPerSecond)} documents/s** (${rate(i.chunksPerSecond)} chunks/s) |`,
    `| Embedder alone${i.embedderOnDocs.model ? ` (${i.embedderOnDocs.model})` : ""}, same ${i.embedderOnDocs.texts} documents as whole texts (${i.threads} thread${i.threads > 1 ? "s" : ""}) | ${rate(i.embedderOnDocs.perSecond)} texts/s (${seconds(i.embedderOnDocs.ms)}) |`,
    `| Embedder alone, the ${i.embedderOnChunks.texts} chunks the pipeline embeds | ${rate(i.embedderOnChunks.perSecond)} chunks/s (${seconds(i.embedderOnChunks.ms)}) |`,
    `| **Ingestion / embedder**, per document (documents/s ÷ texts/s) | **${ratio(i.docsPerSecond, i.embedderOnDocs.perSecond)}** |`,
    `| Ingestion / embedder, per chunk (chunks/s ÷ chunks/s) | ${ratio(i.chunksPerSecond, i.embedderOnChunks.perSecond)} |`,
    `| Service start (store, worker, API) / warm-up document | ${seconds(i.serviceStartMs)} / ${seconds(i.warmupDocMs)} |`,
    "",
    "Per-document latency from `statusHistory` (all documents were submitted at once, so queueing dominates). Each stage row spans from one status to the next, so it includes the wait for a free activity slot and Temporal's hand-over between activities, not only the work of that stage:",
    "",
    "| Span | p50 | p95 | mean | max | n |",
    "|---|---|---|---|---|---|",
    row("queued → done (add to done)", i.latency),
    row("`queued` → `extracting`", i.stages.queued),
    row("`extracting` → `chunking`", i.stages.extracting),
    row("`chunking` → `embedding`", i.stages.chunking),
    row("`embedding` → `done` (embedding, then indexing)", i.stages.embedding),
    "",
    "When the documents reached each status (seconds after the first add; first, median and last document):",
    "",
    "| Status | first | median | last |",
    "|---|---|---|---|",
    ...i.milestones.map(
      (m) => `| \`${m.status}\` | ${seconds(m.first)} | ${seconds(m.p50)} | ${seconds(m.last)} |`,
    ),
    "",
    `No document was in the \`embedding\` stage during ${(100 * i.embedderIdleShare).toFixed(0)} % of the run, so the model was certainly idle at least that long.`,
    "",
    `CPU used, in cores (1.00 = one core busy for the whole phase; this machine has ${m.cores}), from Linux \`/proc\` per thread. "Embedding threads" are the ${i.threads} busiest threads besides the main one, which during these phases are the model's worker threads:`,
    "",
    "| Phase | main thread | embedding thread(s) | other threads | Temporal server | total |",
    "|---|---|---|---|---|---|",
    cpuRow("Embedder alone, the pipeline's chunks", i.embedderOnChunks.cpu),
    cpuRow("Pipeline (first add → all done)", i.cpu),
    "",
  );
  return out;
}

/** CPU used outside the benchmark while the in-process scenarios measured; nothing when none of them ran. */
export function renderLoadSection(r: { ingest?: IngestResult; search?: SearchResult }): string[] {
  const out: string[] = [];
  const p = (...lines: string[]) => out.push(...lines);
  const measured = measuredPhases(r);
  if (measured.length) {
    const busy = measured.filter(
      ([, c]) => c.otherProcesses > OTHER_LOAD_WARNING || c.steal > OTHER_LOAD_WARNING,
    );
    p(
      LOAD_HEADING,
      "",
      "CPU used by everything outside the benchmark (other processes, the kernel) and CPU time stolen by the hypervisor, in cores, while each measurement ran. Figures taken next to a busy machine are slower than the code is.",
      "",
      "| Phase | other processes | steal |",
      "|---|---|---|",
      ...measured.map(([label, c]) => `| ${label} | ${cores(c.otherProcesses)} | ${cores(c.steal)} |`),
      "",
      busy.length
        ? `**Warning:** the machine was busy during ${busy.map(([l]) => l.toLowerCase()).join(", ")} (more than ${OTHER_LOAD_WARNING} cores used elsewhere or stolen); those figures are pessimistic. Rerun on an idle machine.`
        : `The machine was otherwise idle (at most ${OTHER_LOAD_WARNING} cores used elsewhere or stolen in every phase).`,
      "",
    );
  }

  return out;
}
