import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import { type ApiKeyRow, findKey } from "../../store/api-keys.ts";
import {
  consoleSessionIsLive,
  createConsoleSession,
  endConsoleSession,
} from "../../store/console-sessions.ts";
import { consoleSessionSecret, findConsoleUser } from "../../store/console-users.ts";
import type { Database } from "../../store/db.ts";
import type { SecretBox } from "../../store/secrets.ts";
import { ApiError } from "../errors.ts";

export const SESSION_COOKIE = "memory_console";
export const CSRF_HEADER = "x-csrf-token";
/** A session lasts 12 hours from sign-in. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

/** What the signed cookie holds: a random session id, who signed in, and until when. */
export interface SessionClaims {
  sid: string;
  /** "key": signed in with an admin API key (id); "user": a console user (id). */
  kind: "key" | "user";
  sub: string;
  exp: number;
}

export interface SessionIdentity {
  claims: SessionClaims;
  csrfToken: string;
  /** The admin identity requests of this session act as. */
  apiKey: ApiKeyRow;
  user: { kind: "key" | "user"; id: string; name: string; email: string | null };
}

const b64 = (buf: Buffer) => buf.toString("base64url");

/**
 * Signs and checks console session cookies. The HMAC key is SESSION_SECRET when set, otherwise one
 * generated once and kept in the database, so every API replica accepts every replica's cookies.
 */
export class ConsoleSessions {
  private secret?: Promise<Buffer>;

  constructor(
    private readonly db: Database,
    private readonly box: SecretBox,
    private readonly opts: { sessionSecret?: string; secureCookie: (c: Context) => boolean },
  ) {}

  private key(): Promise<Buffer> {
    if (!this.secret) {
      this.secret = this.opts.sessionSecret
        ? Promise.resolve(Buffer.from(this.opts.sessionSecret, "utf8"))
        : consoleSessionSecret(this.db, this.box);
      // A failed read is retried by the next request rather than cached.
      this.secret.catch(() => {
        this.secret = undefined;
      });
    }
    return this.secret;
  }

  private async mac(text: string): Promise<string> {
    return b64(
      createHmac("sha256", await this.key())
        .update(text)
        .digest(),
    );
  }

  /** The CSRF token bound to a session: an HMAC of its id, so nothing needs storing. */
  csrfToken(claims: SessionClaims): Promise<string> {
    return this.mac(`csrf:${claims.sid}`);
  }

  async issue(kind: SessionClaims["kind"], sub: string): Promise<{ cookie: string; claims: SessionClaims }> {
    const claims: SessionClaims = { sid: b64(randomBytes(18)), kind, sub, exp: Date.now() + SESSION_TTL_MS };
    // The row is what makes the session good: signing out or disabling deletes it, whatever copies of the cookie exist.
    await createConsoleSession(this.db, {
      id: claims.sid,
      kind,
      subject: sub,
      expiresAt: new Date(claims.exp),
    });
    const payload = b64(Buffer.from(JSON.stringify(claims)));
    return { cookie: `${payload}.${await this.mac(`session:${payload}`)}`, claims };
  }

  /** The claims of a well-signed, unexpired cookie value, else undefined. */
  async verify(value: string | undefined): Promise<SessionClaims | undefined> {
    if (!value) return undefined;
    const [payload, signature, extra] = value.split(".");
    if (!payload || !signature || extra !== undefined) return undefined;
    const expected = Buffer.from(await this.mac(`session:${payload}`));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    let claims: SessionClaims;
    try {
      claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
    } catch {
      return undefined;
    }
    if (typeof claims?.sid !== "string" || typeof claims.sub !== "string") return undefined;
    if (claims.kind !== "key" && claims.kind !== "user") return undefined;
    if (typeof claims.exp !== "number" || claims.exp <= Date.now()) return undefined;
    return claims;
  }

  /** `Secure` whenever the request came over https (directly, or to a trusted proxy), or PUBLIC_URL is https. */
  cookieOptions(c: Context, maxAgeSeconds: number) {
    return {
      path: "/",
      httpOnly: true,
      sameSite: "Strict" as const,
      secure: this.opts.secureCookie(c),
      maxAge: maxAgeSeconds,
    };
  }

  /**
   * Who a cookie's session is, re-checked against the database on every request: a session signed out, an
   * admin key that was disabled or expired, or a console user who was disabled, ends it at once.
   */
  async identify(c: Context): Promise<SessionIdentity | undefined> {
    const raw = getCookie(c, SESSION_COOKIE);
    if (raw === undefined) return undefined;
    const claims = await this.verify(raw);
    if (!claims) throw new ApiError(401, "unauthorized", "console session is invalid or has expired");
    const identity = await this.resolve(claims);
    if (!identity) throw new ApiError(401, "unauthorized", "console session is no longer valid");
    return identity;
  }

  /** Sign-out: the cookie's session ends on the server, so a copy of the cookie no longer works either. */
  async end(c: Context): Promise<void> {
    const claims = await this.verify(getCookie(c, SESSION_COOKIE));
    if (claims) await endConsoleSession(this.db, claims.sid);
  }

  private async resolve(claims: SessionClaims): Promise<SessionIdentity | undefined> {
    if (!(await consoleSessionIsLive(this.db, claims.sid, claims.kind, claims.sub))) return undefined;
    const csrfToken = await this.csrfToken(claims);
    if (claims.kind === "key") {
      const key = await findKey(this.db, claims.sub);
      if (key?.kind !== "admin" || key.disabledAt) return undefined;
      if (key.expiresAt && key.expiresAt.getTime() <= Date.now()) return undefined;
      return {
        claims,
        csrfToken,
        apiKey: key,
        user: { kind: "key", id: key.id, name: key.name, email: null },
      };
    }
    const user = await findConsoleUser(this.db, claims.sub);
    if (!user || user.disabledAt) return undefined;
    return {
      claims,
      csrfToken,
      apiKey: consoleUserIdentity(user.id, user.email, user.createdAt),
      user: { kind: "user", id: user.id, name: user.email, email: user.email },
    };
  }

  /**
   * For bearerAuth: the admin identity of a request carrying a session cookie and no Authorization
   * header. Anything but GET/HEAD must also carry the session's CSRF token in `x-csrf-token`.
   */
  async authenticate(c: Context): Promise<ApiKeyRow | undefined> {
    const identity = await this.identify(c);
    if (!identity) return undefined;
    if (c.req.method !== "GET" && c.req.method !== "HEAD") {
      const given = Buffer.from(c.req.header(CSRF_HEADER) ?? "");
      const expected = Buffer.from(identity.csrfToken);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        throw new ApiError(
          403,
          "forbidden",
          `missing or wrong ${CSRF_HEADER} header for this console session`,
        );
      }
    }
    return identity.apiKey;
  }
}

/**
 * Console users act as admins. They have no row in api_keys, so requests get an admin identity of
 * their own; its id (`console-user:<id>`) is what rate limiting counts under.
 */
export function consoleUserIdentity(userId: string, email: string, createdAt: Date): ApiKeyRow {
  return {
    id: `console-user:${userId}`,
    name: `console:${email}`,
    kind: "admin",
    keyHash: "",
    keyPrefix: "",
    containerTags: [],
    allowedEndpoints: null,
    rateLimitMax: null,
    rateLimitWindowMs: null,
    expiresAt: null,
    disabledAt: null,
    contactEmail: null,
    createdAt,
  };
}
