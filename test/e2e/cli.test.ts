import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AddResult } from "../../cli/add.ts";
import type { DocumentJson, DocumentsResult } from "../../cli/documents.ts";
import type { ScopedKey } from "../../cli/keys.ts";
import type { ReprocessResult } from "../../cli/reprocess.ts";
import { FIXTURES_DIR } from "../support/fixtures.ts";
import { caller } from "../support/http.ts";
import { repoRoot } from "../support/processes.ts";
import {
  startTestService,
  TEST_ADMIN_KEY,
  type TestService,
  untilProcessed,
  waitFor,
} from "../support/service.ts";

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The CLI as an operator runs it (`npm run cli -- …` is `tsx cli/main.ts …`): a real child process. */
function runCli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const base = { ...process.env };
  // Whatever the machine running the tests has set must not choose the service or the key.
  for (const name of ["MEMORY_URL", "MEMORY_API_KEY", "MEMORY_ADMIN_KEY", "DATA_DIR"]) delete base[name];
  const child = spawn(process.execPath, ["--import", "tsx", "cli/main.ts", ...args], {
    cwd: repoRoot,
    env: { ...base, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const killer = setTimeout(() => child.kill("SIGKILL"), 110_000);
  return new Promise((resolve) =>
    child.once("close", (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr });
    }),
  );
}

function parse<T>(run: Run): T {
  try {
    return JSON.parse(run.stdout) as T;
  } catch {
    throw new Error(`stdout is not JSON (exit ${run.code}):\n${run.stdout}\nstderr:\n${run.stderr}`);
  }
}

/** A page whose answer the test controls: 404 until it is published. */
function startPage() {
  let published = false;
  const server: Server = createServer((_req, res) => {
    if (!published) res.writeHead(404, { "content-type": "text/plain" }).end("not yet");
    else
      res
        .writeHead(200, { "content-type": "text/html" })
        .end(
          "<html><head><title>Lighthouse notes</title></head><body><p>The lighthouse keeper polishes the brass lens every Tuesday at dawn.</p></body></html>",
        );
  });
  return new Promise<{ url: string; publish: () => void; close: () => void }>((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}/notes.html`,
        publish: () => {
          published = true;
        },
        close: () => server.close(),
      });
    }),
  );
}

describe("the operator CLI against a running service", () => {
  let service: TestService;
  let page: Awaited<ReturnType<typeof startPage>>;
  let work: string;
  let folder: string;
  const call = caller(() => service.url);
  const admin = (...args: string[]) => runCli(["--url", service.url, "--key", TEST_ADMIN_KEY, ...args]);
  const runs = (doc: { statusHistory: { run: number }[] }) =>
    Math.max(...doc.statusHistory.map((h) => h.run));

  beforeAll(async () => {
    work = mkdtempSync(path.join(tmpdir(), "memory-cli-"));
    folder = path.join(work, "upload");
    mkdirSync(path.join(folder, "sub"), { recursive: true });
    for (const f of ["text/fake-text.txt", "docx/simple.docx", "pdf/DA-1p.pdf", "pdf/invalid.pdf"]) {
      copyFileSync(path.join(FIXTURES_DIR, f), path.join(folder, path.basename(f)));
    }
    copyFileSync(
      path.join(FIXTURES_DIR, "text/norwich-city.txt"),
      path.join(folder, "sub", "norwich-city.txt"),
    );
    writeFileSync(path.join(folder, ".DS_Store"), "hidden files are not uploaded");
    page = await startPage();
    // Small enough that the test can send a file the service refuses, at once, without reading it all.
    service = await startTestService({ env: { MAX_FILE_BYTES: String(2 * 1024 * 1024) } });
  });

  afterAll(async () => {
    await service?.stop();
    page?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("add uploads a folder's files, waits for processing and reports the failures with reasons", async () => {
    const run = await admin("add", folder, "--container-tag", "cli-docs", "--wait", "--json");
    const result = parse<AddResult>(run);
    // One document failed, so the exit code says so.
    expect(run.code).toBe(1);
    expect(result.counts).toEqual({
      files: 4,
      uploaded: 4,
      uploadErrors: 0,
      done: 3,
      failed: 1,
      unfinished: 0,
    });
    expect(result.documents.map((d) => d.file)).toEqual([
      "DA-1p.pdf",
      "fake-text.txt",
      "invalid.pdf",
      "simple.docx",
    ]);
    const invalid = result.documents.find((d) => d.file === "invalid.pdf");
    expect(invalid).toMatchObject({ status: "failed", errorReason: expect.stringMatching(/PDF/) });
    for (const d of result.documents.filter((x) => x.file !== "invalid.pdf")) expect(d.status).toBe("done");

    // The documents are the service's, with the tag and the file's path inside the folder.
    const docx = (
      await call("GET", `/v3/documents/${result.documents.find((d) => d.file === "simple.docx")?.id}`)
    ).json;
    expect(docx).toMatchObject({
      status: "done",
      containerTags: ["cli-docs"],
      filepath: "simple.docx",
      type: "docx",
    });
  });

  it("add --recursive takes subfolders; without --wait it prints a readable summary of queued documents", async () => {
    const run = await admin("add", folder, "--recursive", "--container-tag", "cli-rec");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`Uploaded 5 of 5 file(s) from ${folder} to container tag cli-rec.`);
    expect(run.stdout).toContain("add --wait");

    await waitFor(async () => {
      const { documents } = (await call("GET", "/v3/documents/processing")).json;
      return documents.length === 0 ? true : undefined;
    }, "the recursive upload to be processed");
    const listed = parse<DocumentsResult>(await admin("documents", "--container-tag", "cli-rec", "--json"));
    expect(listed.documents.every((d) => d.status === "done" || d.status === "failed")).toBe(true);
    expect(listed.documents.map((d) => d.filepath).sort()).toEqual([
      "DA-1p.pdf",
      "fake-text.txt",
      "invalid.pdf",
      "simple.docx",
      "sub/norwich-city.txt",
    ]);
    expect(listed.statusFilter).toBeUndefined();
  });

  it("add reports a file the service refuses and uploads the others; a refused key stops it at once", async () => {
    const mixed = path.join(work, "mixed");
    mkdirSync(mixed);
    writeFileSync(
      path.join(mixed, "otters.txt"),
      "Sea otters hold hands while they sleep so they do not drift apart.",
    );
    writeFileSync(path.join(mixed, "huge.bin"), randomBytes(24 * 1024 * 1024));
    const run = await admin("add", mixed, "--container-tag", "cli-mixed", "--json");
    expect(run.code).toBe(1);
    const result = parse<AddResult>(run);
    expect(result.counts).toMatchObject({ files: 2, uploaded: 1, uploadErrors: 1 });
    expect(result.documents.map((d) => d.file)).toEqual(["otters.txt"]);
    expect(result.uploadErrors).toEqual([
      { file: "huge.bin", error: "413 payload_too_large: request body is larger than 2097152 bytes" },
    ]);

    const refused = await runCli(["--url", service.url, "--key", "sm_not_a_real_key_0000", "add", mixed]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toMatch(/^error: 401 unauthorized: .* the key from --key was refused$/m);
  });

  it("search prints titles, scores and snippets, as JSON or as a table", async () => {
    const json = parse<{ results: { title: string | null; score: number; chunks: { content: string }[] }[] }>(
      await admin(
        "search",
        "Iwan Roberts Norwich City",
        "--container-tag",
        "cli-rec",
        "--limit",
        "2",
        "--json",
      ),
    );
    expect(json.results.length).toBeGreaterThan(0);
    expect(json.results.length).toBeLessThanOrEqual(2);
    expect(json.results[0]?.chunks.map((c) => c.content).join(" ")).toMatch(/Norwich/);

    const text = await admin("search", "test document for unit tests", "--container-tag", "cli-docs");
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^#\s+SCORE\s+TITLE\s+SNIPPET/m);
    expect(text.stdout).toMatch(/\d\.\d{3}\s+This is a test document to use for unit tests\./);
    expect(text.stdout).toMatch(/result\(s\) in \d+ ms, ranked by keywords and meaning together; SCORE is/);
  });

  it("documents filters by status in the CLI, and says so", async () => {
    const failed = parse<DocumentsResult>(
      await admin("documents", "--status", "failed", "--container-tag", "cli-docs", "--json"),
    );
    expect(failed.statusFilter).toEqual({ status: "failed", appliedBy: "client" });
    expect(failed.documents.map((d) => d.fileName)).toEqual(["invalid.pdf"]);
    expect(failed.scanned).toBe(4);

    const done = parse<DocumentsResult>(
      await admin("documents", "--status", "done", "--container-tag", "cli-docs", "--limit", "2", "--json"),
    );
    expect(done.documents).toHaveLength(2);
    expect(done.documents.every((d) => d.status === "done")).toBe(true);

    const table = await admin("documents", "--status", "failed", "--container-tag", "cli-docs");
    expect(table.stdout).toMatch(/^ID\s+STATUS\s+TITLE\s+SOURCE\s+TAGS\s+UPDATED\s+REASON/m);
    expect(table.stdout).toMatch(/failed\s+invalid\.pdf\s+cli-docs/);
    expect(table.stderr).toContain("status filtered by the CLI");

    const wrong = await admin("documents", "--status", "broken");
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toMatch(/Allowed choices are queued, extracting, chunking, embedding, done, failed/);
  });

  it("reprocess-failed sends failed URL, text and file documents again and waits for their outcome", async () => {
    const urlDoc = (await call("POST", "/v3/documents", { content: page.url, containerTag: "cli-docs" }))
      .json;
    const blank = (
      await call("POST", "/v3/documents", {
        content: "  \n ",
        containerTag: "cli-docs",
        customId: "blank-note",
      })
    ).json;
    const get = async (id: string) => (await call("GET", `/v3/documents/${id}`)).json;
    expect((await untilProcessed(get, urlDoc.id)).status).toBe("failed");
    expect((await untilProcessed(get, blank.id)).status).toBe("failed");
    const pdfId = parse<DocumentsResult>(
      await admin("documents", "--status", "failed", "--container-tag", "cli-docs", "--json"),
    ).documents.find((d) => d.fileName === "invalid.pdf")?.id as string;

    const plan = await admin("reprocess-failed", "--container-tag", "cli-docs", "--dry-run", "--json");
    expect(plan.code).toBe(0);
    const planned = parse<ReprocessResult>(plan);
    expect(planned).toMatchObject({ dryRun: true, found: 3, skipped: [], errors: [] });
    expect(
      Object.fromEntries(planned.reprocessed.map((e) => [e.id, [e.kind, e.status, e.customIdAssigned]])),
    ).toEqual({
      [urlDoc.id]: ["url", "planned", true],
      [blank.id]: ["text", "planned", false],
      [pdfId]: ["file", "planned", true],
    });
    // A dry run changes nothing.
    expect(runs(await get(pdfId))).toBe(1);
    expect((await get(urlDoc.id)).customId).toBeNull();

    page.publish();
    const run = await admin("reprocess-failed", "--container-tag", "cli-docs", "--wait", "--json");
    const result = parse<ReprocessResult>(run);
    // The broken PDF and the blank note fail again, which the exit code reports.
    expect(run.code).toBe(1);
    expect(result).toMatchObject({ dryRun: false, waited: true, found: 3, skipped: [], errors: [] });
    const byId = Object.fromEntries(result.reprocessed.map((e) => [e.id, e]));
    expect(byId[urlDoc.id]).toMatchObject({
      kind: "url",
      status: "done",
      title: "Lighthouse notes",
      errorReason: null,
    });
    expect(byId[blank.id]).toMatchObject({ kind: "text", status: "failed", errorReason: expect.any(String) });
    expect(byId[pdfId]).toMatchObject({
      kind: "file",
      status: "failed",
      errorReason: expect.stringMatching(/PDF/),
    });

    // Each was processed again in place: same document, a second run, its tags, path and file kept.
    const pdf: DocumentJson & { statusHistory: { run: number }[] } = await get(pdfId);
    expect(runs(pdf)).toBe(2);
    expect(pdf).toMatchObject({
      customId: pdfId,
      containerTags: ["cli-docs"],
      filepath: "invalid.pdf",
      fileName: "invalid.pdf",
      status: "failed",
    });
    expect(runs(await get(blank.id))).toBe(2);
    expect((await get(blank.id)).customId).toBe("blank-note");
    const search = parse<{ results: { documentId: string }[] }>(
      await admin("search", "lighthouse keeper brass lens", "--container-tag", "cli-docs", "--json"),
    );
    expect(search.results[0]?.documentId).toBe(urlDoc.id);

    // Another tag's failed document was left alone.
    const otherFailed = parse<DocumentsResult>(
      await admin("documents", "--status", "failed", "--container-tag", "cli-rec", "--json"),
    ).documents;
    expect(otherFailed).toHaveLength(1);
    expect(runs(await get(otherFailed[0]?.id as string))).toBe(1);

    const none = await admin("reprocess-failed", "--container-tag", "cli-nothing-here");
    expect(none).toMatchObject({ code: 0, stdout: "No failed documents.\n" });
  });

  it("keys create prints the secret once; the key works in its scope until keys disable", async () => {
    const created = parse<ScopedKey>(
      await admin(
        "keys",
        "create",
        "--container-tag",
        "cli-rec",
        "--name",
        "ops",
        "--expires-in-days",
        "7",
        "--json",
      ),
    );
    expect(created).toMatchObject({ name: "ops", containerTag: "cli-rec", containerTags: ["cli-rec"] });
    expect(created.key).toMatch(/^sm_/);
    const days = (Date.parse(created.expiresAt) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(6.9);
    expect(days).toBeLessThanOrEqual(7);

    const readable = await admin("keys", "create", "--container-tag", "cli-docs");
    expect(readable.code).toBe(0);
    expect(readable.stdout).toMatch(/shown only now/);
    expect(readable.stdout).toMatch(/^ {4}sm_\S+$/m);
    expect(readable.stdout).toMatch(/keys disable \S+/);

    const scoped = (...args: string[]) => runCli(["--url", service.url, "--key", created.key, ...args]);
    const own = parse<DocumentsResult>(await scoped("documents", "--json"));
    expect(own.documents).toHaveLength(5);
    expect(own.documents.every((d) => d.containerTags.includes("cli-rec"))).toBe(true);
    const foreign = await scoped("search", "lighthouse", "--container-tag", "cli-docs");
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toMatch(/^error: 403 forbidden/);
    const notAdmin = await scoped("keys", "create", "--container-tag", "cli-rec");
    expect(notAdmin.stderr).toMatch(/403 forbidden/);
    // A file is read back only through the admin export: with a scoped key it is left, with the reason.
    const retry = await scoped("reprocess-failed", "--json");
    expect(retry.code).toBe(0);
    expect(parse<ReprocessResult>(retry)).toMatchObject({
      found: 1,
      reprocessed: [],
      errors: [],
      skipped: [{ title: "invalid.pdf", reason: expect.stringMatching(/needs an admin key/) }],
    });

    const disabled = await admin("keys", "disable", created.id, "--json");
    expect(disabled.code, disabled.stderr).toBe(0);
    expect(parse(disabled)).toEqual({ success: true, id: created.id });
    const refused = await scoped("documents");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/401 unauthorized: .* the key from --key was refused/);
    const unknown = await admin("keys", "disable", "no-such-key");
    expect(unknown).toMatchObject({ code: 1, stderr: expect.stringMatching(/404 not_found/) });
  });

  it("finds the service and key from MEMORY_URL and DATA_DIR/admin-key, and says what is missing", async () => {
    const dataDir = path.join(work, "data");
    mkdirSync(dataDir);
    const noKey = await runCli(["documents"], { MEMORY_URL: service.url, DATA_DIR: dataDir });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain(
      `no API key: pass --key, set MEMORY_API_KEY, or run where ${dataDir}/admin-key`,
    );

    writeFileSync(path.join(dataDir, "admin-key"), `${TEST_ADMIN_KEY}\n`, { mode: 0o600 });
    const fromFile = await runCli(["documents", "--limit", "1", "--json"], {
      MEMORY_URL: service.url,
      DATA_DIR: dataDir,
    });
    expect(fromFile.code).toBe(0);
    expect(parse<DocumentsResult>(fromFile).documents).toHaveLength(1);

    const fromEnv = await runCli(["documents", "--limit", "1", "--json"], {
      MEMORY_URL: service.url,
      MEMORY_API_KEY: TEST_ADMIN_KEY,
    });
    expect(parse<DocumentsResult>(fromEnv).documents).toHaveLength(1);

    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const down = await runCli(["documents", "--url", `http://127.0.0.1:${port}`, "--key", TEST_ADMIN_KEY]);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/cannot reach the service at http:\/\/127\.0\.0\.1:\d+ .*is it running\?/);

    const noFolder = await admin("add", path.join(work, "missing"));
    expect(noFolder).toMatchObject({ code: 2, stderr: expect.stringMatching(/not a folder/) });
  });
});
