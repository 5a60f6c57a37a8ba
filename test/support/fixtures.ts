import { fileURLToPath } from "node:url";

/** `shared/` sits beside the repository (in a checkout and in CI); fixtures are read in place. */
export const SHARED_DIR =
  process.env.MEMORY_SHARED_DIR ?? fileURLToPath(new URL("../../../shared/", import.meta.url));
export const FIXTURES_DIR = `${SHARED_DIR}fixtures`;
