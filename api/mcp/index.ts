import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { Hono } from "hono";
import type { Config } from "../../config/env.ts";
import type { ApiDeps, AppEnv } from "../deps.ts";
import { ApiError } from "../errors.ts";
import { CONTAINER_TAG_HEADER, McpCaller } from "./context.ts";
import { createMcpServer } from "./server.ts";

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]", "::1"]);

/**
 * DNS-rebinding protection: a request a browser sends carries `Origin`; it is served only when that
 * origin is a loopback one (any port), PUBLIC_URL's, or listed in MCP_ALLOWED_ORIGINS (`*`: any).
 * Requests without `Origin` (MCP clients, curl) are not browsers' and pass. Same host alone is not
 * enough: a rebound name makes a hostile page's origin and the Host header agree.
 */
export function originAllowed(
  origin: string,
  config: Pick<Config, "MCP_ALLOWED_ORIGINS" | "PUBLIC_URL">,
): boolean {
  const allowed = config.MCP_ALLOWED_ORIGINS;
  if (allowed.includes("*")) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // "null" (sandboxed frames, file://) and garbage
  }
  if (allowed.includes(url.origin)) return true;
  if (config.PUBLIC_URL && new URL(config.PUBLIC_URL).origin === url.origin) return true;
  return (url.protocol === "http:" || url.protocol === "https:") && LOOPBACK_HOSTS.has(url.hostname);
}

/**
 * Mounted at /mcp behind the API's bearer auth, rate limit and endpoint guard: Streamable HTTP,
 * stateless (no session id; every POST gets a fresh server and transport, so several API processes
 * can serve one client), answered as JSON.
 */
export function mcpApp(deps: ApiDeps) {
  const app = new Hono<AppEnv>();
  app.use("*", async (c, next) => {
    const origin = c.req.header("origin");
    if (origin !== undefined && !originAllowed(origin, deps.config)) {
      throw new ApiError(
        403,
        "forbidden",
        `origin ${origin} may not use the MCP endpoint (allow it with MCP_ALLOWED_ORIGINS)`,
      );
    }
    await next();
  });

  app.post("/", async (c) => {
    const caller = new McpCaller(
      c.get("apiKey"),
      c.get("scope"),
      c.req.header(CONTAINER_TAG_HEADER) || undefined,
    );
    const server = createMcpServer(deps, caller);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
      maxRequestBodySize: deps.config.MAX_CONTENT_BYTES,
    });
    transport.onerror = (err) => deps.log.debug({ err }, "MCP transport refused a message");
    try {
      await server.connect(transport);
      return await transport.handleRequest(c.req.raw);
    } finally {
      await server.close();
    }
  });

  // Stateless: no server-initiated stream to open (GET) and no session to end (DELETE).
  app.on(["GET", "DELETE"], "/", (c) =>
    c.json({ jsonrpc: "2.0", error: { code: -32000, message: "Method not allowed." }, id: null }, 405, {
      Allow: "POST",
    }),
  );
  return app;
}
