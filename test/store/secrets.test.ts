import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadSecretBox } from "../../store/secrets.ts";
import { repoRoot } from "../support/processes.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Sealer {
  /** Resolves once the child has loaded its code and waits for the go. */
  ready: Promise<void>;
  go(): void;
  /** The sealed word. */
  sealed: Promise<string>;
}

/** One process that, on the go, loads the box from `dataDir` (creating the key if it must) and seals a word. */
function sealInChild(dataDir: string, word: string): Sealer {
  // It reports in once its imports are loaded, then waits on stdin: the go reaches every child at once,
  // so they reach the missing key file together.
  const script = `import { loadSecretBox } from "./store/secrets.ts";
process.stdout.write("ready\\n");
process.stdin.once("data", () => {
  process.stdout.write(loadSecretBox({ dataDir: ${JSON.stringify(dataDir)} }).encrypt(${JSON.stringify(word)}));
  process.stdin.destroy();
});`;
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    cwd: repoRoot,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  let reportIn: () => void = () => {};
  const ready = new Promise<void>((resolve) => (reportIn = resolve));
  child.stdout.on("data", (d) => {
    out += d;
    if (out.startsWith("ready\n")) reportIn();
  });
  child.stderr.on("data", (d) => (err += d));
  const sealed = new Promise<string>((resolve, reject) =>
    child.on("exit", (code) =>
      code === 0 ? resolve(out.slice("ready\n".length)) : reject(new Error(`exit ${code}: ${err}`)),
    ),
  );
  // A child that dies before reporting in fails the test through `sealed`, not a hang on `ready`.
  return { ready: Promise.race([ready, sealed.then(() => {})]), go: () => child.stdin.write("go\n"), sealed };
}

describe("the generated encryption key", () => {
  it("is created once when several processes start together on one DATA_DIR, and all of them use it", async () => {
    // An API and workers sharing a volume at first boot: each must end up with the same key.
    const dataDir = mkdtempSync(path.join(tmpdir(), "memory-secrets-"));
    dirs.push(dataDir);
    const words = Array.from({ length: 6 }, (_, i) => `secret-${i}`);
    const sealers = words.map((w) => sealInChild(dataDir, w));
    // The barrier: every child has reported in, and none has made the key yet.
    await Promise.all(sealers.map((s) => s.ready));
    expect(readdirSync(dataDir)).toEqual([]);
    for (const s of sealers) s.go();
    const sealed = await Promise.all(sealers.map((s) => s.sealed));
    const box = loadSecretBox({ dataDir });
    expect(sealed.map((s) => box.decrypt(s))).toEqual(words);
    // No temporary files are left beside it.
    expect(readdirSync(dataDir)).toEqual(["encryption-key"]);
  });
});

describe("derived keys", () => {
  it("gives each purpose its own stable key, the same in every process sharing the key", () => {
    const key = "ab".repeat(32);
    const box = loadSecretBox({ envKey: key, dataDir: "/nonexistent" });
    const again = loadSecretBox({ envKey: key, dataDir: "/nonexistent" });
    const other = loadSecretBox({ envKey: "cd".repeat(32), dataDir: "/nonexistent" });
    const links = box.derive("document-file-links");
    expect(links).toHaveLength(32);
    expect(again.derive("document-file-links").equals(links)).toBe(true);
    expect(box.derive("another-purpose").equals(links)).toBe(false);
    expect(other.derive("document-file-links").equals(links)).toBe(false);
    // Never the encryption key itself.
    expect(links.equals(Buffer.from(key, "hex"))).toBe(false);
  });
});
