// The attacker's own process (bench/lib/attacker.ts, spawnAttacker): options as JSON in argv[2], the result as
// one line on stdout. SIGTERM ends the attack early; what is in flight still gets its grace.

import { type AttackerOptions, attack, RESULT_PREFIX } from "./attacker.ts";

const options = JSON.parse(process.argv[2] ?? "{}") as AttackerOptions;
const controller = new AbortController();
process.on("SIGTERM", () => controller.abort());
const result = await attack(options, controller.signal);
process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(result)}\n`);
process.exit(0);
