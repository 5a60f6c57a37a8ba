import { describe, expect, it } from "vitest";
import { IMPORTED_HEADING, renderImportedSection } from "../../bench/lib/imported-report.ts";
import { INDEXED_SCOPE } from "../../bench/lib/indexed-scope.ts";
import type { SearchResult, SearchSizeResult } from "../../bench/search.ts";
import type { ImportedSearchOptions, ImportedSearchResult } from "../../bench/search-imported.ts";

// The section of the search-imported scenario, from made-up figures: its verdicts and the baseline line
// are computed from them, so they must flip when the figures do.

const summary = (p50: number, p95: number) => ({ n: 200, p50, p95, mean: p50, max: p95 * 1.2 });

const options: ImportedSearchOptions = {
  chunks: 100_000,
  tags: 1000,
  chunksPerDoc: 2,
  churn: 0.05,
  searches: 200,
  clients: 8,
  threads: 2,
};

function result(sequentialP95: number, concurrentP95: number): ImportedSearchResult {
  return {
    embedder: { name: "bge-small", model: "bge-small-en-v1.5" },
    documents: { imported: 52_632, deleted: 2_631, updated: 2_631, live: 50_001 },
    liveChunks: 100_002,
    fillMs: 900_000,
    fillRate: 61.4,
    maintenance: { statisticsMs: 120, passMs: 2_000, steps: ["vacuum documents 40 ms"] },
    sizes: [
      {
        table: "chunks",
        heapMb: 180,
        indexes: [{ name: "chunks_hnsw_bge_small_en_v1_5", mb: 195 }],
        live: 100_002,
        dead: 0,
      },
    ],
    sequential: [
      {
        route: "POST /v3/search",
        scope: '"all" (every chunk)',
        client: summary(sequentialP95 / 2, sequentialP95),
        server: summary(sequentialP95 / 2 - 3, sequentialP95 - 3),
        errors: 0,
        meanResults: 10,
      },
    ],
    concurrent: [
      {
        route: "POST /v3/search",
        scope: '"all" (every chunk)',
        clients: 8,
        requests: 400,
        latency: summary(concurrentP95 / 2, concurrentP95),
        errors: 0,
        throughput: 40,
      },
    ],
  };
}

const seeded = (p95: number): SearchResult =>
  ({ sizes: [{ chunks: 100_000, http: summary(p95 / 2, p95) } as SearchSizeResult] }) as SearchResult;

const row = (lines: string[], start: string) => lines.find((l) => l.startsWith(start)) ?? "";

describe("the search-imported section", () => {
  it("says within or over from the figures, against the issue's goals", () => {
    const fast = renderImportedSection(result(40, 120), options);
    expect(fast[0]).toBe(IMPORTED_HEADING);
    expect(row(fast, '| POST /v3/search | "all"')).toMatch(/\| within \|$/);
    expect(fast.filter((l) => l.startsWith('| POST /v3/search | "all"')).at(-1)).toMatch(/\| within \|$/);
    const slow = renderImportedSection(result(60, 200), options);
    expect(row(slow, '| POST /v3/search | "all"')).toMatch(/\| over \|$/);
    expect(slow.filter((l) => l.startsWith('| POST /v3/search | "all"')).at(-1)).toMatch(/\| over \|$/);
  });

  it("sets the imported figure beside the bulk-loaded one of the same run, or says how to get both", () => {
    const beside = renderImportedSection(result(40, 120), options, seeded(20)).join("\n");
    expect(beside).toContain("p95 2.00× of the bulk-loaded one");
    const alone = renderImportedSection(result(40, 120), options).join("\n");
    expect(alone).toContain("npm run bench -- --only search,search-imported --chunks 100000");
  });

  it("compares the unfiltered big-tag row with the baseline, and says what the filtered rows filter", () => {
    const r = result(40, 120);
    const filtered = {
      ...(r.sequential[0] as ImportedSearchResult["sequential"][number]),
      scope: '"all", filtered to one of 200 projects (metadata: 0.5 % of the documents)',
      client: summary(200, 400),
    };
    const lines = renderImportedSection(
      { ...r, sequential: [filtered, ...r.sequential] },
      options,
      seeded(20),
    );
    expect(row(lines, '| POST /v3/search | "all", filtered')).toMatch(/\| 400 ms \|.*\| over \|$/);
    expect(lines.join("\n")).toContain("p95 2.00× of the bulk-loaded one");
    expect(lines.join("\n")).toContain("The filtered rows add a metadata filter");
    expect(lines.join("\n")).not.toContain("An `ignoreCase` condition is matched");
    expect(renderImportedSection(r, options).join("\n")).not.toContain("The filtered rows");
    const ignoringCase = {
      ...filtered,
      scope: '"all", filtered to one of 200 projects with ignoreCase (its own index: lower-cased metadata)',
    };
    expect(
      renderImportedSection({ ...r, sequential: [ignoringCase, ...r.sequential] }, options).join("\n"),
    ).toContain(
      "An `ignoreCase` condition is matched on the documents' metadata with every string lower-cased",
    );
  });

  it("gives each concurrency row its CPU per search, and says what the floor row is, when the run has them", () => {
    const r = result(40, 120);
    const big = r.concurrent[0] as ImportedSearchResult["concurrent"][number];
    const floor = {
      ...big,
      scope: "a tag with no documents (the floor: nothing to rank)",
      latency: summary(90, 180),
      cpuPerRequest: { mainMs: 11.24, busiestOtherMs: 12.4, otherMs: 4.06, machineMs: 32.5 },
    };
    const lines = renderImportedSection({ ...r, concurrent: [big, floor] }, options);
    const text = lines.join("\n");
    expect(text).toContain(
      "| CPU: main thread | CPU: busiest other thread | CPU: other threads | CPU: machine |",
    );
    expect(row(lines, "| POST /v3/search | a tag with no documents")).toMatch(
      /\| 180 ms \|.*\| over \| 11\.2 ms \| 12\.4 ms \| 4\.1 ms \| 32\.5 ms \|$/,
    );
    // A row measured without CPU figures says so rather than leaving a cell out.
    expect(lines.filter((l) => l.startsWith('| POST /v3/search | "all"')).at(-1)).toMatch(
      /\| within \| n\/a \| n\/a \| n\/a \| n\/a \|$/,
    );
    expect(text).toContain("a floor no faster store could go under");
    const before = renderImportedSection(r, options).join("\n");
    expect(before).not.toContain("CPU: main thread");
    expect(before).not.toContain("a floor no faster store");
  });

  it("gives the clients' thread a CPU column of its own when the clients ran apart from the service", () => {
    const r = result(40, 120);
    const big = r.concurrent[0] as ImportedSearchResult["concurrent"][number];
    const apart = {
      ...big,
      cpuPerRequest: { mainMs: 9.5, busiestOtherMs: 10.2, otherMs: 1.1, machineMs: 23.4, clientsMs: 0.61 },
    };
    const lines = renderImportedSection({ ...r, concurrent: [apart] }, options);
    const text = lines.join("\n");
    expect(text).toContain("| CPU: other threads | CPU: clients | CPU: machine |");
    expect(lines.filter((l) => l.startsWith('| POST /v3/search | "all"')).at(-1)).toMatch(
      /\| 9\.5 ms \| 10\.2 ms \| 1\.1 ms \| 0\.6 ms \| 23\.4 ms \|$/,
    );
    expect(text).toContain("not in the service's event loop");
    // A run from before (clients in the service's event loop) keeps its columns and says nothing of a thread.
    const before = renderImportedSection(
      {
        ...r,
        concurrent: [
          { ...big, cpuPerRequest: { mainMs: 9.5, busiestOtherMs: 10.2, otherMs: 1.1, machineMs: 23.4 } },
        ],
      },
      options,
    ).join("\n");
    expect(before).not.toContain("CPU: clients");
    expect(before).toContain("the service and its clients run in it");
  });
  it("sets each row served through the in-memory index beside the same row served by SQL", () => {
    const r = result(40, 200);
    const indexedRow = <T extends { scope: string }>(x: T, changes: Partial<T>): T => ({
      ...x,
      scope: `${x.scope}${INDEXED_SCOPE}`,
      ...changes,
    });
    const [seq] = r.sequential as [ImportedSearchResult["sequential"][number]];
    const [conc] = r.concurrent as [ImportedSearchResult["concurrent"][number]];
    const withIndex: ImportedSearchResult = {
      ...r,
      sequential: [seq, indexedRow(seq, { client: summary(15, 30) })],
      concurrent: [
        { ...conc, cpuPerRequest: { mainMs: 33, busiestOtherMs: 12, otherMs: 1, machineMs: 50 } },
        indexedRow(conc, {
          latency: summary(100, 140),
          throughput: 60,
          cpuPerRequest: { mainMs: 16.5, busiestOtherMs: 12, otherMs: 1, machineMs: 32 },
        }),
      ],
      searchIndex: { chunks: 100_002, buildMs: 64_000, rssBeforeMb: 900, rssAfterMb: 1_400 },
    };
    const lines = renderImportedSection(withIndex, options);
    const text = lines.join("\n");
    expect(text).toContain("Its index of 100,002 chunks was built in 64.0 s after the service was up");
    expect(text).toContain("from 900 to 1,400 MiB resident");
    expect(text).toContain('- POST /v3/search in "all" (every chunk): p95 30.0 ms against 40.0 ms (0.75×).');
    expect(text).toContain(
      '- 8 clients in "all" (every chunk): 60.0 against 40.0 searches/s, p95 140 ms against 200 ms, main thread 16.5 against 33.0 ms a search.',
    );
    expect(row(lines, `| POST /v3/search | "all" (every chunk)${INDEXED_SCOPE} | 8 |`)).toMatch(
      /\| within \|/,
    );
    expect(renderImportedSection(r, options).join("\n")).not.toContain("in-memory index");
    // Since the index became the default, the SQL rows' start names SEARCH_INDEX=sql, and the page says so.
    const named = renderImportedSection({ ...withIndex, sqlNamed: true }, options).join("\n");
    expect(named).toContain("Served by the real service with `SEARCH_INDEX=sql`");
    expect(named).toContain("with `SEARCH_INDEX=memory`, the embedded store's default");
    expect(text).not.toContain("the embedded store's default");
  });

  it("counts live chunks when the run counted them, else names what the documents hold by construction", () => {
    const counted = renderImportedSection(result(40, 120), options).join("\n");
    expect(counted).toContain("Live: 50,001 documents, 100,002 chunks.");
    expect(counted).toContain("covers about 100 chunks");
    const lost = renderImportedSection({ ...result(40, 120), liveChunks: 0 }, options).join("\n");
    expect(lost).toContain(
      "Live: 50,001 documents, 100,002 chunks (2 per document; not counted in this run).",
    );
    expect(lost).toContain("covers about 100 chunks");
  });
});
