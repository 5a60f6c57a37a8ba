import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { caller } from "../support/http.ts";
import { repoRoot } from "../support/processes.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService } from "../support/service.ts";

/** The text of a resource's content (resources here are text, never blobs). */
const textOf = (content: object | undefined) => (content && "text" in content ? String(content.text) : "");

// biome-ignore lint/suspicious/noExplicitAny: structured results are inspected loosely
type Structured = Record<string, any>;

/** The environment of an assistant starting the command: nothing of the test machine's choosing. */
function cleanEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  for (const name of ["MEMORY_URL", "MEMORY_API_KEY", "MEMORY_ADMIN_KEY", "MEMORY_PROJECT", "DATA_DIR"])
    delete env[name];
  return { ...env, ...extra };
}

describe("MCP memory server over stdio (the CLI's `mcp` command)", () => {
  let service: TestService;
  let elsewhere: string;
  const call = caller(() => service.url);
  const clients: Client[] = [];

  /**
   * The command as the README configures it for Claude Desktop: the project's tsx binary running
   * cli/main.ts by absolute path, started from an unrelated folder, the key in the environment.
   */
  async function spawnClient(
    args: string[],
    env: Record<string, string>,
    command = {
      command: path.join(repoRoot, "node_modules", ".bin", "tsx"),
      args: [path.join(repoRoot, "cli", "main.ts"), "mcp"],
    },
  ) {
    const transport = new StdioClientTransport({
      command: command.command,
      args: [...command.args, ...args],
      cwd: elsewhere,
      env: cleanEnv(env),
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    const client = new Client({ name: "mcp-stdio-test", version: "1.0.0" });
    clients.push(client);
    try {
      await client.connect(transport);
    } catch (error) {
      throw new Error(`${(error as Error).message}\nstderr: ${stderr}`);
    }
    return { client, stderr: () => stderr };
  }

  async function tool(client: Client, name: string, args: Record<string, unknown> = {}) {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    const text = result.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");
    return { isError: Boolean(result.isError), text, structured: result.structuredContent as Structured };
  }

  beforeAll(async () => {
    service = await startTestService();
    elsewhere = mkdtempSync(path.join(tmpdir(), "mcp-client-"));
  });
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => {});
    await service?.stop();
    if (elsewhere) rmSync(elsewhere, { recursive: true, force: true });
  });

  it("lists tools, saves, recalls, searches, forgets, reads the profile and gets the context prompt", async () => {
    const { client, stderr } = await spawnClient(["--url", service.url, "--project", "stdio-project"], {
      MEMORY_API_KEY: TEST_ADMIN_KEY,
    });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(
      expect.arrayContaining([
        "add_memory",
        "search_memory",
        "listDocuments",
        "getDocument",
        "listMemories",
        "listSpaces",
        "whoAmI",
        "memory",
        "recall",
      ]),
    );

    const saved = await tool(client, "memory", { content: "Linus maintains a sourdough starter named Tux" });
    expect(saved.isError, saved.text).toBe(false);
    expect(saved.structured).toMatchObject({ action: "save", containerTag: "stdio-project" });
    const added = await tool(client, "add_memory", { content: "Linus commutes by folding bicycle" });
    expect(added.isError, added.text).toBe(false);

    const recalled = await tool(client, "recall", {
      query: "what bread does Linus bake",
      includeProfile: true,
    });
    expect(recalled.structured.results[0].memory).toBe("Linus maintains a sourdough starter named Tux");
    expect(recalled.structured.profile.dynamic).toHaveLength(2);
    expect(recalled.text).toContain("sourdough starter");
    const searched = await tool(client, "search_memory", { query: "how does Linus get to work" });
    expect(searched.structured.results[0].memory).toBe("Linus commutes by folding bicycle");

    // Stored where the REST API sees it: the --project tag.
    const rest = await call("POST", "/v4/memories/list", { containerTags: ["stdio-project"] });
    expect(rest.json.memories).toHaveLength(2);

    const forgotten = await tool(client, "memory", {
      content: "Linus maintains a sourdough starter named Tux",
      action: "forget",
    });
    expect(forgotten.structured).toMatchObject({ action: "forget", id: saved.structured.id, match: "exact" });
    const after = await tool(client, "recall", { query: "what bread does Linus bake" });
    expect(after.structured.results.map((r: { memory: string }) => r.memory)).not.toContain(
      "Linus maintains a sourdough starter named Tux",
    );

    const profile = await client.readResource({ uri: "supermemory://profile" });
    expect(textOf(profile.contents[0])).toContain("- Linus commutes by folding bicycle");
    expect(textOf(profile.contents[0])).not.toContain("sourdough");
    const prompt = await client.getPrompt({ name: "context", arguments: {} });
    expect(JSON.stringify(prompt.messages)).toContain("Linus commutes by folding bicycle");
    expect(stderr()).toContain("bridging stdio to");
  });

  it("also runs as `npm run --silent cli -- mcp` with nothing but MCP on stdout", async () => {
    const { client } = await spawnClient(
      ["--url", service.url],
      { MEMORY_API_KEY: TEST_ADMIN_KEY },
      { command: "npm", args: ["run", "--silent", "--prefix", repoRoot, "cli", "--", "mcp"] },
    );
    const who = await tool(client, "whoAmI");
    expect(who.structured).toMatchObject({ kind: "admin", defaultContainerTag: "sm_project_default" });
  });

  it("keeps a scoped key inside its container tag", async () => {
    const created = await call("POST", "/v3/auth/scoped-key", { containerTag: "stdio-alice" });
    expect(created.status).toBe(200);
    const { client } = await spawnClient(["--url", service.url], { MEMORY_API_KEY: created.json.key });
    const own = await tool(client, "add_memory", { content: "Alice's stdio memory" });
    expect(own.structured.containerTag).toBe("stdio-alice");
    for (const [name, args] of [
      ["memory", { content: "intrusion", containerTag: "stdio-project" }],
      ["recall", { query: "Linus", containerTag: "stdio-project" }],
      ["search_memory", { query: "Linus", containerTag: "stdio-project" }],
      ["listMemories", { containerTag: "stdio-project" }],
      ["listDocuments", { containerTag: "stdio-project" }],
    ] as const) {
      const refused = await tool(client, name, args);
      expect(refused.isError, `${name}: ${refused.text}`).toBe(true);
      expect(refused.text).toMatch(/forbidden: this key may not use container tag 'stdio-project'/);
    }
    const spaces = await tool(client, "listSpaces");
    expect(spaces.structured.spaces.map((s: { containerTag: string }) => s.containerTag)).toEqual([
      "stdio-alice",
    ]);
  });

  it("refuses to run without a key, and the service refuses a wrong one", async () => {
    // No key anywhere (no flag, no environment, no admin-key file in DATA_DIR): the command exits.
    const empty = mkdtempSync(path.join(tmpdir(), "mcp-nokey-"));
    try {
      await expect(spawnClient(["--url", service.url], { DATA_DIR: empty })).rejects.toThrow(/no API key/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
    await expect(
      spawnClient(["--url", service.url], { MEMORY_API_KEY: "sm_wrong_key_0123456789abcdef" }),
    ).rejects.toThrow(/401/);
  });
});
