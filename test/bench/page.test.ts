import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { anchor, renderPage, renderReport } from "../../bench/lib/page.ts";
import {
  fromJson,
  type RunFile,
  readHistory,
  resultFileName,
  type ScenarioRecord,
  toJson,
  writeRunFile,
} from "../../bench/lib/results.ts";
import { revisionInfo } from "../../bench/lib/revision.ts";
import { ms } from "../../bench/lib/stats.ts";
import type { IngestRun, LoadRun, ScaleOptions, ScaleResult } from "../../bench/scale.ts";
import { SCENARIOS, selectScenarios } from "../../bench/scenarios.ts";

// Rendering docs/benchmarks.md from a stored run: no benchmark runs here, the results are made up.

const temp = mkdtempSync(path.join(tmpdir(), "bench-page-test-"));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

const summary = (p50: number) => ({ n: 10, p50, p95: p50 * 1.5, mean: p50 * 1.1, max: p50 * 2 });

function ingestRun(workers: number, docsPerSecond: number): IngestRun {
  return {
    workers,
    documents: 200,
    chunks: 600,
    wallMs: (200 / docsPerSecond) * 1000,
    docsPerSecond,
    chunksPerSecond: docsPerSecond * 3,
    addToDone: summary(5_000),
    failed: 0,
    load: [0.1, 1.9],
  };
}

function loadRun(apis: number, connections: number, perSecond: number, p50: number): LoadRun {
  return {
    label: `${apis} API(s), ${connections} connection(s)`,
    apis,
    connections,
    durationS: 15,
    requests: Math.round(perSecond * 15),
    perSecond,
    latency: { ...summary(p50), p99: p50 * 3 },
    errors: 0,
    non2xx: 0,
    load: [0.2, 2.1],
  };
}

const scaleOptions: ScaleOptions = {
  docs: 200,
  workers: [1, 2],
  searchChunks: 10_000,
  buildMemory: "256MB",
  connections: [1, 16],
  durationS: 15,
  memoryChunks: 100_000,
  skipIngest: false,
  skipSearch: false,
  skipMemory: true,
};

function scaleResult(twoWorkersRate: number, twoApisRate: number): ScaleResult {
  return {
    embedder: "bge-small-en-v1.5",
    ingest: [ingestRun(1, 2.0), ingestRun(2, twoWorkersRate)],
    search: {
      chunks: 10_000,
      seedMs: 30_000,
      runs: [loadRun(1, 1, 20, 50), loadRun(1, 16, 21, 700), loadRun(2, 16, twoApisRate, 650)],
    },
    totalMs: 600_000,
  };
}

function run(opts: { started: string; commit: string; clean?: boolean; scale: ScaleResult }): RunFile {
  return {
    format: 1,
    header: {
      started: opts.started,
      finished: opts.started.replace("T10", "T11"),
      totalMs: 3_600_000,
      machine: { cpu: "Test CPU 9000", cores: 2, memoryGiB: 23.5, os: "Linux 6.1", node: "v20.20.2" },
      load: { start: [0.12, 0.3, 0.25], end: [1.5, 1.2, 0.8] },
      revision: {
        commit: opts.commit,
        clean: opts.clean ?? true,
        dirty: opts.clean === false ? ["bench/scale.ts"] : [],
      },
      command: "npm run bench -- --only scale,extraction",
      scenarios: ["extraction", "scale"],
    },
    results: {
      extraction: {
        options: { repeats: 3 },
        ms: 60_000,
        result: {
          repeats: 3,
          files: [{ file: "pdf/a.pdf", type: "pdf", outcome: "text", chars: 1200, ms: summary(40) }],
          byType: [{ type: "pdf", files: 1, ms: summary(40) }],
          ocr: [],
          speech: [],
          unavailable: ["whisper: not installed"],
        },
      },
      scale: { options: scaleOptions, ms: 600_000, result: opts.scale },
    },
  };
}

describe("the benchmark page", () => {
  it("has one header naming date, machine, load, commit and clean/dirty", async () => {
    const page = await renderPage(
      run({ started: "2026-11-26T10:00:00.000Z", commit: "abc1234", scale: scaleResult(3, 30) }),
    );
    expect(page.match(/^# /gm)).toHaveLength(1);
    expect(page).toContain("2026-11-26T10:00:00.000Z");
    expect(page).toContain("Test CPU 9000, 2 cores, 23.5 GiB memory, Linux 6.1, Node v20.20.2");
    expect(page).toContain("0.12 / 0.30 / 0.25 at the start, 1.50 / 1.20 / 0.80 at the end");
    expect(page).toContain("Commit: abc1234, **clean**");
    expect(page).toContain("`npm run bench -- --only scale,extraction`");
    const dirty = await renderPage(
      run({
        started: "2026-11-26T10:00:00.000Z",
        commit: "abc1234",
        clean: false,
        scale: scaleResult(3, 30),
      }),
    );
    expect(dirty).toContain("**dirty**: 1 file differed from it (`bench/scale.ts`)");
    expect(page).not.toContain("Re-measured on its own");
  });

  it("says which scenario and options produced each section, and lists the others as not run", async () => {
    const figures = run({
      started: "2026-11-26T10:00:00.000Z",
      commit: "abc1234",
      scale: scaleResult(3, 30),
    });
    const page = await renderReport(figures);
    expect(page).toContain("*Scenario `scale` of this run, options: docs=200, workers=1,2,");
    expect(page).toContain("*Scenario `extraction` of this run, options: repeats=3;");
    for (const text of [page, await renderPage(figures)]) {
      for (const name of ["ingest", "search", "bulk", "connections", "eval"])
        expect(text).toContain(`Not run in this run: \`npm run bench -- --with ${name}`);
      // Headings stay even when not run, so links into the page and the report keep working.
      for (const s of SCENARIOS) for (const sec of s.sections) expect(text).toContain(`\n${sec.heading}\n`);
    }
    // A part of a scenario left out says so instead of showing older figures.
    expect(page).toContain("Not measured in this run (`--scale-skip-memory`)");
    // The PostgreSQL settings and warm-up the scale search ran with, older results (neither stored) included.
    expect(page).toContain("after a 5 s warm-up");
    expect(page).toContain("PostgreSQL settings: initdb's defaults, with fsync");
    const tuned = run({ started: "2026-11-26T10:00:00.000Z", commit: "abc1234", scale: scaleResult(3, 30) });
    const stored = tuned.results.scale;
    if (stored) stored.options = { ...scaleOptions, warmupS: 60, serverSettings: { shared_buffers: "6GB" } };
    const tunedPage = await renderReport(tuned);
    expect(tunedPage).toContain("after a 60 s warm-up");
    expect(tunedPage).toContain("PostgreSQL settings: `shared_buffers=6GB`; otherwise initdb's defaults");
  });

  it("chooses the conclusions from the figures: they flip when the figures do", async () => {
    const faster = await renderReport(
      run({ started: "2026-11-26T10:00:00.000Z", commit: "a", scale: scaleResult(3, 30) }),
    );
    const slower = await renderReport(
      run({ started: "2026-11-26T10:00:00.000Z", commit: "a", scale: scaleResult(1.2, 15) }),
    );
    expect(faster).toContain("2 workers 1.50× the documents/s of 1");
    expect(faster).toContain("raised the rate by more than 10 %");
    expect(faster).not.toContain("lowered the rate");
    expect(slower).toContain("2 workers 0.60× the documents/s of 1");
    expect(slower).toContain("lowered the rate by more than 10 %");
    expect(slower).not.toContain("raised the rate");
    expect(faster).toContain("2 API processes served 1.43× the searches/s of one on 2 cores");
    expect(faster).toContain(": added capacity on this machine");
    expect(slower).toContain(": fewer searches than one process on this machine");
    // One API process from 1 to 16 connections: 20 → 21 searches/s while p50 grew 14×.
    expect(faster).toContain("the added connections queued");
    for (const page of [faster, slower]) {
      expect(page).not.toMatch(/cannot help|adds no capacity/);
    }
  });

  it("takes a scenario the run left out from the newest earlier run that measured it, and says so", async () => {
    const older = run({ started: "2026-11-24T10:00:00.000Z", commit: "0000000", scale: scaleResult(2, 20) });
    const old = run({ started: "2026-11-25T10:00:00.000Z", commit: "1111111", scale: scaleResult(3, 30) });
    // The newest run measured extraction only.
    const newer = run({
      started: "2026-11-26T10:00:00.000Z",
      commit: "2222222",
      scale: scaleResult(1.2, 15),
    });
    delete newer.results.scale;
    newer.header.scenarios = ["extraction"];
    const history = [older, old, newer].map((r, i) => ({ file: path.join(temp, `run-${i}.json`), run: r }));
    const page = await renderReport(newer, { file: path.join(temp, "run-2.json"), history });
    // Scale's section comes from the newest run with scale (1111111), its provenance naming that run.
    expect(page).toContain("*Scenario `scale` of an earlier run, ");
    expect(page).toContain(
      "2026-11-25T10:00:00.000Z, commit 1111111; not run in the run this page is rendered from",
    );
    expect(page).toContain("2 workers 1.50× the documents/s of 1");
    expect(page).not.toContain("2 workers 1.00× the documents/s of 1");
    expect(page).toContain("*Scenario `extraction` of this run, options: repeats=3;");
    expect(page).toContain("from earlier runs: `scale` (2026-11-25, 1111111)");
    expect(page).toContain("come from the newest earlier stored run that measured each");
    // Scenarios no stored run measured stay listed as not run.
    expect(page).toContain("Not run in this run: `npm run bench -- --with bulk");
    // The page names the earlier run and its CPU under the section.
    const short = await renderPage(newer, { file: path.join(temp, "run-2.json"), history });
    expect(short).toContain(
      "*`scale`, an earlier run, `run-1.json` (2026-11-25, commit 1111111); Test CPU 9000, 2 cores",
    );
    expect(short).toContain("*`extraction`, this run; Test CPU 9000, 2 cores");
  });

  it("keeps the page short: per section its run, CPU, first table and a link into the report", async () => {
    const r = run({ started: "2026-11-26T10:00:00.000Z", commit: "abc1234", scale: scaleResult(3, 30) });
    r.header.machine.int8Dot = "the CPU has avx512_vnni";
    const page = await renderPage(r);
    const report = await renderReport(r);
    expect(page).toContain("Node v20.20.2; the CPU has avx512_vnni");
    expect(page).toContain("[the full report](../bench/results/report.md)");
    const scale = page.slice(
      page.indexOf(SCENARIOS.find((s) => s.name === "scale")?.sections[0]?.heading ?? "?"),
    );
    const section = scale.slice(0, scale.indexOf("\n## ", 1));
    const heading = section.split("\n")[0] ?? "";
    expect(section).toContain(
      `Test CPU 9000, 2 cores (the CPU has avx512_vnni); queries embedded with fp32 weights. Set-up, options, every table and the conclusions: [report](../bench/results/report.md#${anchor(heading)})`,
    );
    expect(report).toContain(`\n${heading}\n`);
    // One table: the worker processes' rates with the 1-worker baseline and the ratio; the rest is in the report.
    expect(section.match(/^\| workers \|/gm)).toHaveLength(1);
    expect(section.match(/^\| API processes \|/gm)).toBeNull();
    expect(report).toMatch(/^\| API processes \|/m);
    expect(section).toContain("| 1.50× |");
    expect(page.length).toBeLessThan(report.length);
    expect(anchor("## Search on imported data (issue #25)")).toBe("search-on-imported-data-issue-25");
  });

  it("generates the History table from every stored result file", async () => {
    const dir = path.join(temp, "results");
    const older = run({ started: "2026-11-25T10:00:00.000Z", commit: "1111111", scale: scaleResult(3, 30) });
    const newer = run({
      started: "2026-11-26T10:00:00.000Z",
      commit: "2222222",
      clean: false,
      scale: scaleResult(1.2, 15),
    });
    writeRunFile(older, dir);
    writeRunFile(newer, dir);
    writeFileSync(path.join(dir, "broken.json"), "{ not json");
    const history = readHistory(dir);
    expect(history).toHaveLength(2);
    const page = await renderPage(newer, { history });
    const table = page.slice(page.indexOf("## History"), page.indexOf("## How to run"));
    const rows = table.split("\n").filter((l) => /^\| 2026/.test(l));
    expect(rows).toHaveLength(2);
    // Newest first, each with its commit and its own headline figures.
    expect(rows[0]).toContain("2222222 with uncommitted changes to 1 file");
    expect(rows[0]).toContain("2: 0.60×");
    expect(rows[1]).toContain("1111111");
    expect(rows[1]).toContain("2: 1.50×");
    expect(table).toContain("extraction pdf p50");
    // The scale search's one-connection p95 with its store size (a 1M run's figures reach the page this way).
    expect(table).toContain("scale search p95, 1 connection");
    expect(rows[0]).toContain(`${ms(summary(50).p95)} at 10,000`);
    // Files outside bench/results/ are named, not linked (the page's links must reach real files).
    expect(rows[0]).not.toContain("](");
    expect(resultFileName(newer.header)).toBe("20261126T100000Z-2222222-dirty.json");
  });

  it("renders the SciFact section from bench/eval.ts's stored figures, without running the evaluation", async () => {
    const r = run({ started: "2026-11-26T10:00:00.000Z", commit: "abc1234", scale: scaleResult(3, 30) });
    r.results.eval = {
      options: { threads: 1, reset: false, scores: false, extra: [] },
      ms: 1_000,
      result: fromJson(
        toJson({
          format: 1,
          header: r.header,
          results: {
            x: {
              options: {},
              ms: 0,
              result: {
                report: {
                  kind: "scifact-eval",
                  started: "2026-11-26T10:05:00.000Z",
                  command: "npm run eval -- --result-json /tmp/x.json",
                  revision: "zzz",
                  machine: "test machine",
                  model: "bge-small",
                  threads: 1,
                  corpus: 5183,
                  split: {
                    file: "bench/scifact-split.json",
                    method: "sha256 order",
                    tuning: "dev",
                    dev: 150,
                    test: 150,
                    note: "No train judgements.",
                  },
                  queries: { dev: 150, test: 150 },
                  tuning: {
                    fusion: "blend",
                    blendVectorWeight: 0.6,
                    keywordRank: "ts_rank/1",
                    maxTermFrequency: 0.03,
                  },
                  ingestion: "reused the cached store",
                  modes: [
                    {
                      mode: "hybrid",
                      label: "hybrid",
                      figures: {
                        dev: { queries: 150, ndcg10: 0.7371, recall100: 0.9, mrr10: 0.7, empty: 0 },
                        test: { queries: 150, ndcg10: 0.7371, recall100: 0.9, mrr10: 0.7, empty: 0 },
                        all: { queries: 150, ndcg10: 0.7371, recall100: 0.9, mrr10: 0.7, empty: 0 },
                      },
                      p50: 40,
                      p95: 60,
                    },
                  ],
                  published: "BM25 0.679",
                },
              },
            },
          },
        }),
      ).results.x?.result,
    };
    const history = [{ file: "/elsewhere/a.json", run: r }];
    const page = await renderReport(r, { history });
    const section = page.slice(
      page.indexOf("## Retrieval quality (SciFact)"),
      page.indexOf("## What a score means"),
    );
    expect(section).toContain("*Scenario `eval` of this run");
    expect(section).toContain("| 0.737 |");
    // The run's command and commit, not the child process's.
    expect(section).toContain("`npm run bench -- --only scale,extraction`");
    expect(section).not.toContain("/tmp/x.json");
    const short = await renderPage(r, { history });
    expect(short).toContain("Not measured in this run: `npm run bench -- --with eval --eval-scores`");
    expect(short).toContain("| 0.737 |");
  });

  it("stores NaN and Infinity so they come back as numbers", () => {
    const figures = scaleResult(3, 30);
    figures.totalMs = Number.POSITIVE_INFINITY;
    if (figures.search) figures.search.seedMs = Number.NaN;
    const r = run({ started: "2026-11-26T10:00:00.000Z", commit: "a", scale: figures });
    const back = fromJson(toJson(r)).results.scale as ScenarioRecord<ScaleOptions, ScaleResult>;
    expect(back.result?.search?.seedMs).toBeNaN();
    expect(back.result?.totalMs).toBe(Number.POSITIVE_INFINITY);
  });

  it("selects scenarios: defaults, --with, --only, --all and --skip", () => {
    expect(selectScenarios({})).toEqual(["ingest", "search", "extraction", "attack"]);
    expect(selectScenarios({ with: "bulk,scale" })).toEqual([
      "ingest",
      "search",
      "extraction",
      "scale",
      "bulk",
      "attack",
    ]);
    expect(selectScenarios({ only: "scale" })).toEqual(["scale"]);
    expect(selectScenarios({ all: true, skip: "bulk" })).toHaveLength(SCENARIOS.length - 1);
    expect(selectScenarios({ skip: "search" })).toEqual(["ingest", "extraction", "attack"]);
    expect(() => selectScenarios({ with: "nope" })).toThrow(/unknown scenario/);
  });
});

describe("revisionInfo", () => {
  const git = (cwd: string, ...args: string[]) =>
    execFileSync("git", ["-c", "user.email=t@example.com", "-c", "user.name=t", ...args], {
      cwd,
      stdio: "pipe",
    });

  function repo(): string {
    const dir = mkdtempSync(path.join(temp, "repo-"));
    git(dir, "init", "-q");
    for (const f of [
      "bench/main.ts",
      "docs/guide.md",
      "docs/benchmarks.md",
      "bench/results/old.json",
      "api.ts",
    ]) {
      mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
      writeFileSync(path.join(dir, f), "one\n");
    }
    git(dir, "add", ".");
    git(dir, "commit", "-q", "-m", "start");
    return dir;
  }

  it("is clean on a fresh commit", () => {
    const r = revisionInfo(repo());
    expect(r).toMatchObject({ clean: true, dirty: [] });
    expect(r.commit).toMatch(/^[0-9a-f]{7,}$/);
  });

  it("flags a modified file under bench/ or docs/, and untracked files, but not the page or bench/results/", () => {
    const dir = repo();
    writeFileSync(path.join(dir, "docs/benchmarks.md"), "rendered\n");
    writeFileSync(path.join(dir, "bench/results/new.json"), "{}\n");
    expect(revisionInfo(dir).clean).toBe(true);
    writeFileSync(path.join(dir, "bench/main.ts"), "two\n");
    expect(revisionInfo(dir)).toMatchObject({ clean: false, dirty: ["bench/main.ts"] });
    writeFileSync(path.join(dir, "docs/guide.md"), "two\n");
    writeFileSync(path.join(dir, "scratch.ts"), "new\n");
    expect(revisionInfo(dir).dirty).toEqual(["bench/main.ts", "docs/guide.md", "scratch.ts"]);
  });
});
