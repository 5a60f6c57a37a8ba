export * from "./api-keys.ts";
export * from "./chunks.ts";
export * from "./documents.ts";
export * from "./memories.ts";
export * from "./rate-limits.ts";
export * from "./settings.ts";
