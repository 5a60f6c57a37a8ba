import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    // Real services (Temporal, PostgreSQL, the embedding model) are heavy on 2 cores: run files one at a time.
    fileParallelism: false,
    pool: "forks",
  },
});
