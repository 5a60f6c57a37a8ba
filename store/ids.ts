import { randomBytes } from "node:crypto";

/** Short, URL-safe, random identifiers (~128 bits), readable in logs and workflow ids. */
export function newId(bytes = 16): string {
  return randomBytes(bytes).toString("base64url");
}
