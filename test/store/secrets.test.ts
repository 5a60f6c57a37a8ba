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

/** One process that loads the box from `dataDir` (creating the key if it must) and seals a word with it. */
function sealInChild(dataDir: string, word: string, startAt: number): Promise<string> {
  // Every child spins until the same moment, so they reach the missing key file together.
  const script = `import { loadSecretBox } from "./store/secrets.ts";
while (Date.now() < ${startAt}) {}
process.stdout.write(loadSecretBox({ dataDir: ${JSON.stringify(dataDir)} }).encrypt(${JSON.stringify(word)}));`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: repoRoot,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}: ${err}`))));
  });
}

describe("the generated encryption key", () => {
  it("is created once when several processes start together on one DATA_DIR, and all of them use it", async () => {
    // An API and workers sharing a volume at first boot: each must end up with the same key.
    const dataDir = mkdtempSync(path.join(tmpdir(), "memory-secrets-"));
    dirs.push(dataDir);
    const words = Array.from({ length: 6 }, (_, i) => `secret-${i}`);
    const startAt = Date.now() + 4000;
    const sealed = await Promise.all(words.map((w) => sealInChild(dataDir, w, startAt)));
    const box = loadSecretBox({ dataDir });
    expect(sealed.map((s) => box.decrypt(s))).toEqual(words);
    // No temporary files are left beside it.
    expect(readdirSync(dataDir)).toEqual(["encryption-key"]);
  });
});
