import { fileURLToPath } from "node:url";
import type { BundleOptions } from "@temporalio/worker";

/**
 * How the workflow code is bundled: by the workers, and by the replay test (test/workflows/replay.test.ts),
 * which must replay recorded histories against exactly the code the workers run.
 */
export const workflowBundleOptions = {
  workflowsPath: fileURLToPath(new URL("../workflows/index.ts", import.meta.url)),
} satisfies BundleOptions;
