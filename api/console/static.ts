import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Hono } from "hono";
import { errorBody } from "../errors.ts";

/** Where `npm run console:build` (and scripts/setup.mjs) put the built console. */
export const CONSOLE_DIST = fileURLToPath(new URL("../../console/dist/", import.meta.url));

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".webmanifest": "application/manifest+json",
  ".txt": "text/plain; charset=utf-8",
  ".map": "application/json",
};

const SECURITY_HEADERS = {
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "same-origin",
  "X-Frame-Options": "DENY",
  "Content-Security-Policy":
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'",
};

async function fileIn(dir: string, rel: string): Promise<string | undefined> {
  const full = path.resolve(dir, rel);
  if (full !== dir && !full.startsWith(dir.endsWith(path.sep) ? dir : dir + path.sep)) return undefined;
  try {
    return (await stat(full)).isFile() ? full : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The web console's static files at /console/: hashed assets cached for good, anything else that is
 * not a file gets index.html (client-side routes). Without a build, a 503 that says how to make one.
 */
export function consoleStaticApp(distDir = CONSOLE_DIST) {
  const dir = path.resolve(distDir);
  const app = new Hono();
  app.get("/console", (c) => c.redirect("/console/", 301));
  app.get("/console/*", async (c) => {
    const index = await fileIn(dir, "index.html");
    if (!index) {
      return c.json(
        errorBody(
          "console_not_built",
          "the web console is not built: run `npm run console:build` (npm start and npm test build it too)",
        ),
        503,
      );
    }
    let rel: string;
    try {
      rel = decodeURIComponent(c.req.path.slice("/console/".length));
    } catch {
      rel = "";
    }
    const file = (rel && !rel.includes("\0") && (await fileIn(dir, rel))) || undefined;
    if (!file && rel.startsWith("assets/")) {
      return c.json(errorBody("not_found", `no console file ${rel}`), 404);
    }
    const chosen = file ?? index;
    const body = await readFile(chosen);
    const type = TYPES[path.extname(chosen).toLowerCase()] ?? "application/octet-stream";
    const immutable = chosen !== index && rel.startsWith("assets/");
    return c.body(body, 200, {
      "Content-Type": type,
      "Cache-Control": immutable ? "public, max-age=31536000, immutable" : "no-cache",
      ...SECURITY_HEADERS,
    });
  });
  return app;
}
