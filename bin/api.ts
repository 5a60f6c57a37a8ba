// `npm run api`: the HTTP API alone (scale-out mode, with DATABASE_URL and TEMPORAL_ADDRESS).
import { runFromCommandLine } from "../runtime/cli.ts";

await runFromCommandLine(["api"]);
