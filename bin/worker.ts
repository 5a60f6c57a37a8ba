// `npm run worker`: the Temporal worker alone (scale-out mode, with DATABASE_URL and TEMPORAL_ADDRESS).
import { runFromCommandLine } from "../runtime/cli.ts";

await runFromCommandLine(["worker"]);
