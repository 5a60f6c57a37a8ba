import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Config } from "../config/env.ts";
import type { Logger } from "../config/logger.ts";
import { createKey, hasAdminKey, keyExistsForSecret } from "../store/api-keys.ts";
import type { Database } from "../store/db.ts";

/**
 * At first start there must be a way in: MEMORY_ADMIN_KEY if given (stored hashed), otherwise a
 * generated key printed once and written to DATA_DIR/admin-key (mode 0600).
 */
export async function ensureAdminKey(db: Database, config: Config, log: Logger): Promise<void> {
  if (config.MEMORY_ADMIN_KEY) {
    if (!(await keyExistsForSecret(db, config.MEMORY_ADMIN_KEY))) {
      await createKey(db, { name: "admin (MEMORY_ADMIN_KEY)", kind: "admin" }, config.MEMORY_ADMIN_KEY);
      log.info("admin key from MEMORY_ADMIN_KEY registered");
    }
    return;
  }
  const file = path.join(config.dataDir, "admin-key");
  if (await hasAdminKey(db)) {
    if (existsSync(file)) log.info({ file }, "admin key is in this file");
    return;
  }
  const { secret } = await createKey(db, { name: "admin", kind: "admin" });
  mkdirSync(config.dataDir, { recursive: true });
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  // Printed once on purpose: it is the only way in for a new user.
  process.stdout.write(`\n  Admin API key (also written to ${file}):\n\n    ${secret}\n\n`);
}
