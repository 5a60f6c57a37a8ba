import { randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { BlobNotFoundError, type BlobStore } from "./types.ts";

/** Files under one directory; keys may contain "/" (fanned out into folders). */
export function createDiskBlobStore(root: string): BlobStore {
  const file = (key: string) => {
    const resolved = path.resolve(root, key);
    // Keys come from our own code, but never let one escape the root.
    if (!resolved.startsWith(path.resolve(root) + path.sep)) throw new Error(`invalid blob key ${key}`);
    return resolved;
  };
  return {
    kind: "disk",
    async put(key, bytes) {
      const target = file(key);
      await mkdir(path.dirname(target), { recursive: true });
      // Write then rename: a crash mid-write never leaves a truncated file under the real key.
      const temp = `${target}.${randomBytes(6).toString("hex")}.tmp`;
      await writeFile(temp, bytes);
      await rename(temp, target);
    },
    async get(key) {
      try {
        return await readFile(file(key));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") throw new BlobNotFoundError(key);
        throw error;
      }
    },
    async delete(key) {
      await rm(file(key), { force: true });
    },
    async *list(prefix) {
      const base = path.resolve(root);
      // Walk only the folders the prefix can reach (keys use "/" whatever the platform).
      const start = path.join(base, prefix.slice(0, prefix.lastIndexOf("/") + 1));
      let entries: string[];
      try {
        entries = await readdir(start, { recursive: true });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
        throw error;
      }
      for (const entry of entries) {
        const full = path.join(start, entry);
        const key = path.relative(base, full).split(path.sep).join("/");
        if (!key.startsWith(prefix)) continue;
        const info = await stat(full).catch(() => undefined);
        if (info?.isFile()) yield { key, modifiedAt: info.mtime };
      }
    },
  };
}
