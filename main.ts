// `npm start`: everything on one machine (API + worker, PGlite, Temporal dev server unless TEMPORAL_ADDRESS).
import { runFromCommandLine } from "./runtime/cli.ts";

await runFromCommandLine(["api", "worker"]);
