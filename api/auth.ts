import { createMiddleware } from "hono/factory";
import { type ApiKeyRow, findActiveKey } from "../store/api-keys.ts";
import type { Database } from "../store/db.ts";
import { ApiError } from "./errors.ts";

export type AuthEnv = { Variables: { apiKey: ApiKeyRow } };

/** Every request carries `Authorization: Bearer <key>`; unknown, disabled or expired keys get 401. */
export function bearerAuth(db: Database) {
  return createMiddleware<AuthEnv>(async (c, next) => {
    const header = c.req.header("authorization") ?? "";
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    if (!match?.[1]) {
      throw new ApiError(401, "unauthorized", "missing bearer token: send 'Authorization: Bearer <API key>'");
    }
    const key = await findActiveKey(db, match[1]);
    if (!key) throw new ApiError(401, "unauthorized", "invalid, expired or disabled API key");
    c.set("apiKey", key);
    await next();
  });
}
