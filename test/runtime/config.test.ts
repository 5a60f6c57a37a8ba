import { describe, expect, it } from "vitest";
import { loadConfig } from "../../config/env.ts";
import { declaredOAuthEnvNames } from "../../connectors/oauth-apps.ts";

describe("configuration durations", () => {
  it("reads durations as milliseconds, off where a schedule can be switched off, and refuses the rest", () => {
    const defaults = loadConfig({});
    expect(defaults.FILE_SWEEP_INTERVAL).toBe(24 * 3600_000);
    expect(defaults.FILE_SWEEP_GRACE).toBe(3600_000);
    expect(defaults.KEY_EXPIRY_NOTICE_INTERVAL).toBe(3600_000);
    expect(defaults.METRICS_PUBLIC).toBe(false);
    expect(defaults.PGLITE_SHARED_BUFFERS).toBe("auto");
    expect(defaults.SEARCH_INDEX).toBe("memory");
    expect(loadConfig({ SEARCH_INDEX: "sql" }).SEARCH_INDEX).toBe("sql");
    expect(() => loadConfig({ SEARCH_INDEX: "disk" })).toThrow(/SEARCH_INDEX/);
    expect(loadConfig({ PGLITE_SHARED_BUFFERS: "64MB" }).PGLITE_SHARED_BUFFERS).toBe("64MB");
    expect(() => loadConfig({ PGLITE_SHARED_BUFFERS: "automatic" })).toThrow(/PGLITE_SHARED_BUFFERS/);
    expect(defaults.EMBEDDING_QUERY_PRECISION).toBe("auto");
    expect(loadConfig({ EMBEDDING_QUERY_PRECISION: "int8" }).EMBEDDING_QUERY_PRECISION).toBe("int8");
    expect(loadConfig({ EMBEDDING_QUERY_PRECISION: "int8-block" }).EMBEDDING_QUERY_PRECISION).toBe(
      "int8-block",
    );
    expect(loadConfig({ EMBEDDING_QUERY_PRECISION: "int8-smooth" }).EMBEDDING_QUERY_PRECISION).toBe(
      "int8-smooth",
    );
    expect(loadConfig({ EMBEDDING_QUERY_PRECISION: "fp32" }).EMBEDDING_QUERY_PRECISION).toBe("fp32");
    expect(() => loadConfig({ EMBEDDING_QUERY_PRECISION: "fp16" })).toThrow(/EMBEDDING_QUERY_PRECISION/);
    expect(defaults.EMBEDDING_DOCUMENT_PRECISION).toBe("fp32");
    expect(loadConfig({ EMBEDDING_DOCUMENT_PRECISION: "int8-block" }).EMBEDDING_DOCUMENT_PRECISION).toBe(
      "int8-block",
    );
    // The Xenova int8 export and int8-smooth mix a batch's texts: never for documents.
    for (const precision of ["int8", "int8-smooth"])
      expect(() => loadConfig({ EMBEDDING_DOCUMENT_PRECISION: precision })).toThrow(
        /EMBEDDING_DOCUMENT_PRECISION/,
      );
    const set = loadConfig({ FILE_SWEEP_INTERVAL: "off", FILE_SWEEP_GRACE: "10m", METRICS_PUBLIC: "true" });
    expect(set.FILE_SWEEP_INTERVAL).toBe(0);
    expect(set.FILE_SWEEP_GRACE).toBe(600_000);
    expect(set.METRICS_PUBLIC).toBe(true);
    expect(() => loadConfig({ FILE_SWEEP_GRACE: "off" })).toThrow(/FILE_SWEEP_GRACE/);
    expect(() => loadConfig({ KEY_EXPIRY_NOTICE_INTERVAL: "soon" })).toThrow(/KEY_EXPIRY_NOTICE_INTERVAL/);
  });
});

describe("the service's own OAuth apps", () => {
  it("are read from the env variables each OAuth connector declares, under the names they always had", () => {
    const env = {
      GOOGLE_CLIENT_ID: "google-id",
      GOOGLE_CLIENT_SECRET: "google-secret",
      MICROSOFT_CLIENT_ID: "microsoft-id",
      MICROSOFT_CLIENT_SECRET: "microsoft-secret",
      NOTION_CLIENT_ID: "notion-id",
      NOTION_CLIENT_SECRET: "notion-secret",
      GITHUB_CLIENT_ID: "github-id",
      GITHUB_CLIENT_SECRET: "github-secret",
    };
    expect(loadConfig(env).oauthAppEnv).toEqual(env);
  });

  it("include every app a connector declares (config/ reads them by their shape, knowing no provider)", () => {
    const env = Object.fromEntries(declaredOAuthEnvNames().map((name) => [name, `value of ${name}`]));
    expect(Object.keys(env).length).toBeGreaterThanOrEqual(8);
    expect(loadConfig(env).oauthAppEnv).toEqual(env);
  });

  it("leave out what is unset or empty, and nothing else from the environment", () => {
    const config = loadConfig({ NOTION_CLIENT_ID: "notion-id", GITHUB_CLIENT_SECRET: "", PORT: "9000" });
    expect(config.oauthAppEnv).toEqual({ NOTION_CLIENT_ID: "notion-id" });
  });
});
