import { createHash } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";

/** Every stored copy of these bytes under a service's DATA_DIR/files (keys are `files/<2 hex>/<sha256>[.suffix]`). */
export function storedCopies(dataDir: string, bytes: Buffer): string[] {
  const sha = createHash("sha256").update(bytes).digest("hex");
  const dir = path.join(dataDir, "files", "files", sha.slice(0, 2));
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name === sha || name.startsWith(`${sha}.`))
    .map((name) => path.join(dir, name));
}
