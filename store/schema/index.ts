export * from "./api-keys.ts";
export * from "./chunks.ts";
export * from "./documents.ts";
