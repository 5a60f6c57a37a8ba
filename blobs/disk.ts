import { randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
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
  };
}
