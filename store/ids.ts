import { randomBytes } from "node:crypto";

/**
 * Short, URL-safe, random identifiers (~128 bits), readable in logs and workflow ids. Never starting with "-":
 * one base64url id in 64 did, and a command line then read it as an option (`npm run cli -- keys disable -NV8…`
 * failed with "unknown option"). Such a first character becomes "_", at a cost of under 0.03 bits.
 */
export function newId(bytes = 16): string {
  const id = randomBytes(bytes).toString("base64url");
  return id.startsWith("-") ? `_${id.slice(1)}` : id;
}
