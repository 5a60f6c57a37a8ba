import type { RouteHandler } from "@hono/zod-openapi";
import type { Context } from "hono";
import { deleteCookie, setCookie } from "hono/cookie";
import * as users from "../../store/console-users.ts";
import type { AuthFailures } from "../auth-throttle.ts";
import type { ApiDeps, AppEnv } from "../deps.ts";
import { ApiError, notFound } from "../errors.ts";
import type * as routes from "./routes.ts";
import { type ConsoleSessions, SESSION_COOKIE, SESSION_TTL_MS, type SessionIdentity } from "./session.ts";

function presentUser(row: users.ConsoleUserRow) {
  return {
    id: row.id,
    email: row.email,
    createdAt: row.createdAt.toISOString(),
    disabledAt: row.disabledAt?.toISOString() ?? null,
  };
}

function presentSession(identity: Pick<SessionIdentity, "claims" | "csrfToken" | "user">) {
  return {
    csrfToken: identity.csrfToken,
    user: identity.user,
    expiresAt: new Date(identity.claims.exp).toISOString(),
  };
}

/** A hash to compare against when the email is unknown, so both cases take as long. */
let decoyHash: Promise<string> | undefined;

function decoy(): Promise<string> {
  if (!decoyHash) {
    decoyHash = users.hashPassword("decoy password for unknown emails");
    // A refused hash (too many at once) is tried again by the next sign-in rather than kept.
    decoyHash.catch(() => {
      decoyHash = undefined;
    });
  }
  return decoyHash;
}

/** Password checks are bounded (store/console-users.ts); a refused one is the server's load, not the client's fault. */
async function hashing<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof users.PasswordHashBusy)
      throw new ApiError(503, "busy", error.message, undefined, { "Retry-After": "1" });
    throw error;
  }
}

export function createConsoleHandlers(deps: ApiDeps, sessions: ConsoleSessions, failures: AuthFailures) {
  async function startSession(c: Context, kind: "key" | "user", sub: string) {
    const { cookie, claims } = await sessions.issue(kind, sub);
    setCookie(c, SESSION_COOKIE, cookie, sessions.cookieOptions(c, Math.floor(SESSION_TTL_MS / 1000)));
    return { claims, csrfToken: await sessions.csrfToken(claims) };
  }

  const signIn: RouteHandler<typeof routes.signIn, AppEnv> = async (c) => {
    const body = c.req.valid("json");
    // Held by the failures of its address (and e-mail) before any key lookup or password hash
    // (api/auth-throttle.ts): a failure costs the failer, never the holder of the right key or password.
    if ("apiKey" in body) {
      const apiKey = body.apiKey;
      const key = await failures.signIn(c, undefined, async () => {
        const found = await failures.findKey(apiKey);
        if (!found) throw new ApiError(401, "unauthorized", "invalid, expired or disabled API key");
        return found;
      });
      if (key.kind !== "admin")
        throw new ApiError(403, "forbidden", "only an admin key can sign in to the console");
      const session = await startSession(c, "key", key.id);
      return c.json(
        presentSession({ ...session, user: { kind: "key", id: key.id, name: key.name, email: null } }),
        200,
      );
    }
    const email = users.normaliseEmail(body.email);
    const user = await failures.signIn(c, email, async () => {
      const found = await users.findConsoleUserByEmail(deps.db, email);
      const ok = await hashing(async () =>
        users.verifyPassword(body.password, found?.passwordHash ?? (await decoy())),
      );
      if (!found || !ok || found.disabledAt)
        throw new ApiError(401, "unauthorized", "wrong email or password");
      return found;
    });
    const session = await startSession(c, "user", user.id);
    return c.json(
      presentSession({
        ...session,
        user: { kind: "user", id: user.id, name: user.email, email: user.email },
      }),
      200,
    );
  };

  const getSession: RouteHandler<typeof routes.getSession, AppEnv> = async (c) => {
    const identity = await sessions.identify(c);
    if (!identity) throw new ApiError(401, "unauthorized", "not signed in to the console");
    return c.json(presentSession(identity), 200);
  };

  const signOut: RouteHandler<typeof routes.signOut, AppEnv> = async (c) => {
    await sessions.end(c);
    deleteCookie(c, SESSION_COOKIE, sessions.cookieOptions(c, 0));
    return c.json({ success: true as const }, 200);
  };

  const createUser: RouteHandler<typeof routes.createUser, AppEnv> = async (c) => {
    const body = c.req.valid("json");
    if (await users.findConsoleUserByEmail(deps.db, body.email)) {
      throw new ApiError(409, "conflict", "a console user with this email exists", "email");
    }
    return c.json(presentUser(await hashing(() => users.createConsoleUser(deps.db, body))), 200);
  };

  const listUsers: RouteHandler<typeof routes.listUsers, AppEnv> = async (c) => {
    return c.json({ users: (await users.listConsoleUsers(deps.db)).map(presentUser) }, 200);
  };

  const disableUser: RouteHandler<typeof routes.disableUser, AppEnv> = async (c) => {
    if (!(await users.disableConsoleUser(deps.db, c.req.valid("param").id))) throw notFound("console user");
    return c.json({ success: true as const }, 200);
  };

  const getConfig: RouteHandler<typeof routes.getConfig, AppEnv> = async (c) => {
    return c.json(
      {
        temporalUiUrl: deps.config.TEMPORAL_UI_URL?.replace(/\/+$/, "") ?? null,
        temporalNamespace: deps.config.TEMPORAL_NAMESPACE,
        maxFileBytes: deps.config.MAX_FILE_BYTES,
      },
      200,
    );
  };

  return { signIn, getSession, signOut, createUser, listUsers, disableUser, getConfig };
}
