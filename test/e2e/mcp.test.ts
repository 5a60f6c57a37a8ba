import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointAllowed } from "../../api/key-scope.ts";
import { caller } from "../support/http.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService } from "../support/service.ts";

/** The official MCP client over Streamable HTTP, as Cursor or VS Code connect with `url` + `headers`. */
async function connect(url: string, key: string | null, headers: Record<string, string> = {}) {
  const client = new Client({ name: "mcp-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: { headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers } },
  });
  await client.connect(transport);
  return client;
}

/** The text of a resource's content (resources here are text, never blobs). */
const textOf = (content: object | undefined) => (content && "text" in content ? String(content.text) : "");

// biome-ignore lint/suspicious/noExplicitAny: structured results are inspected loosely
type Structured = Record<string, any>;

async function callTool(client: Client, name: string, args: Record<string, unknown> = {}) {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");
  return { result, text, structured: result.structuredContent as Structured | undefined };
}

/** A call that must succeed: its text and structured content. */
async function ok(client: Client, name: string, args: Record<string, unknown> = {}) {
  const out = await callTool(client, name, args);
  expect(out.result.isError, out.text).toBeFalsy();
  expect(out.structured, `${name} has structured content`).toBeDefined();
  return out as { text: string; structured: Structured };
}

/** A call the server must refuse as a tool error (not data, not a protocol failure). */
async function refused(client: Client, name: string, args: Record<string, unknown>, why: RegExp) {
  const out = await callTool(client, name, args);
  expect(out.result.isError, `${name} ${JSON.stringify(args)} → ${out.text}`).toBe(true);
  expect(out.text).toMatch(why);
  expect(out.structured).toBeUndefined();
  return out.text;
}

describe("MCP memory server over Streamable HTTP", () => {
  let service: TestService;
  let admin: Client;
  const call = caller(() => service.url);
  const clients: Client[] = [];
  const open = async (key: string | null, headers: Record<string, string> = {}) => {
    const client = await connect(service.url, key, headers);
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    service = await startTestService();
    admin = await open(TEST_ADMIN_KEY);
  });
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => {});
    await service?.stop();
  });

  it("lists the current and the earlier tool names, the resources and the context prompt", async () => {
    const { tools } = await admin.listTools();
    const names = tools.map((t) => t.name).sort();
    expect(names).toEqual(
      [
        "add_memory",
        "getDocument",
        "listDocuments",
        "listMemories",
        "listSpaces",
        "memory",
        "recall",
        "search_memory",
        "whoAmI",
      ].sort(),
    );
    const memory = tools.find((t) => t.name === "memory");
    expect(Object.keys(memory?.inputSchema.properties ?? {}).sort()).toEqual([
      "action",
      "containerTag",
      "content",
    ]);
    expect(memory?.inputSchema.required).toEqual(["content"]);
    const recall = tools.find((t) => t.name === "recall");
    expect(Object.keys(recall?.inputSchema.properties ?? {})).toEqual(
      expect.arrayContaining(["query", "includeProfile", "containerTag"]),
    );
    for (const t of tools) expect(t.outputSchema, `${t.name} declares its output`).toBeDefined();

    const { resources } = await admin.listResources();
    expect(resources.map((r) => r.uri).sort()).toEqual(["supermemory://profile", "supermemory://spaces"]);
    const { prompts } = await admin.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual(["context"]);
    expect(admin.getServerVersion()?.name).toBe("supermemory");
  });

  it("saves with memory and add_memory, finds with recall and search_memory, and forgets", async () => {
    const tea = "Ada prefers green tea over coffee in the morning";
    const dog = "Ada's dog is a border collie called Biscuit";
    const saved = await ok(admin, "memory", { content: tea });
    expect(saved.structured).toMatchObject({
      action: "save",
      containerTag: "sm_project_default",
      memory: tea,
    });
    expect(saved.text).toContain(saved.structured.id);
    const added = await ok(admin, "add_memory", { content: dog, action: "save" });
    expect(added.structured).toMatchObject({ action: "save", containerTag: "sm_project_default" });

    // The same store as the REST API: both memories are listed there.
    const listed = await call("POST", "/v4/memories/list", { containerTags: ["sm_project_default"] });
    expect(listed.status).toBe(200);
    expect(listed.json.memories.map((m: { memory: string }) => m.memory).sort()).toEqual([dog, tea].sort());

    const recalled = await ok(admin, "recall", { query: "What does Ada like to drink?" });
    expect(recalled.structured.results[0]).toMatchObject({ id: saved.structured.id, memory: tea });
    expect(recalled.structured.profile.dynamic).toEqual(expect.arrayContaining([tea, dog]));
    expect(recalled.text).toContain("## Matching memories");
    expect(recalled.text).toContain(tea);
    expect(recalled.text).toContain("## Recent context");

    const searched = await ok(admin, "search_memory", { query: "name of the dog", includeProfile: false });
    expect(searched.structured.results[0]).toMatchObject({ id: added.structured.id, memory: dog });
    expect(searched.structured.profile).toBeUndefined();
    expect(searched.text).not.toContain("## Recent context");

    // REST search finds what MCP saved, with the same similarity (one implementation).
    const rest = await call("POST", "/v4/search", {
      q: "name of the dog",
      containerTag: "sm_project_default",
    });
    expect(rest.json.results[0]).toMatchObject({
      id: added.structured.id,
      similarity: searched.structured.results[0].similarity,
    });

    const listedByMcp = await ok(admin, "listMemories", {});
    expect(listedByMcp.structured.memories.map((m: { memory: string }) => m.memory).sort()).toEqual(
      [dog, tea].sort(),
    );

    // forget, exact content (earlier name).
    const forgotten = await ok(admin, "memory", { content: tea, action: "forget" });
    expect(forgotten.structured).toMatchObject({ action: "forget", id: saved.structured.id, match: "exact" });
    expect(forgotten.text).toContain("Memory forgotten");
    const after = await ok(admin, "recall", { query: "What does Ada like to drink?" });
    expect(after.structured.results.map((r: { memory: string }) => r.memory)).not.toContain(tea);
    expect(after.structured.profile.dynamic).not.toContain(tea);
    await refused(admin, "memory", { content: tea, action: "forget" }, /no memory|already forgotten/);

    // forget, closest match (current name): a rewording finds the memory it means.
    const similar = await ok(admin, "add_memory", {
      content: "Ada's dog is a border collie named Biscuit",
      action: "forget",
    });
    expect(similar.structured).toMatchObject({ action: "forget", id: added.structured.id, match: "similar" });
    expect(similar.structured.similarity).toBeGreaterThanOrEqual(0.75);
    // Nothing close enough: refused, nothing forgotten.
    const other = await ok(admin, "add_memory", { content: "The office wifi password rotates monthly" });
    await refused(
      admin,
      "add_memory",
      { content: "quantum chromodynamics lecture notes", action: "forget" },
      /no memory/,
    );
    const remaining = await ok(admin, "listMemories", {});
    expect(remaining.structured.memories.map((m: { id: string }) => m.id)).toEqual([other.structured.id]);
  });

  it("serves the profile resource and the context prompt of the effective container tag", async () => {
    const project = await open(TEST_ADMIN_KEY, { "x-sm-project": "mcp-profile" });
    await ok(project, "add_memory", { content: "Grace writes compilers in COBOL" });
    const stat = await call("POST", "/v4/memories", {
      containerTag: "mcp-profile",
      memories: [{ content: "Grace is a rear admiral", isStatic: true }],
    });
    expect(stat.status).toBe(201);

    const profile = await project.readResource({ uri: "supermemory://profile" });
    const markdown = profile.contents.find((c) => c.mimeType === "text/markdown");
    expect(textOf(markdown)).toContain("## Profile\n- Grace is a rear admiral");
    expect(textOf(markdown)).toContain("## Recent context\n- Grace writes compilers in COBOL");
    const json = profile.contents.find((c) => c.mimeType === "application/json");
    expect(JSON.parse(textOf(json))).toEqual({
      containerTag: "mcp-profile",
      static: ["Grace is a rear admiral"],
      dynamic: ["Grace writes compilers in COBOL"],
    });
    // Without the header, the admin connection's profile is the default tag's.
    const defaultProfile = await admin.readResource({ uri: "supermemory://profile" });
    expect(JSON.stringify(defaultProfile.contents)).not.toContain("Grace");

    const prompt = await project.getPrompt({ name: "context", arguments: {} });
    const text = prompt.messages.map((m) => (m.content.type === "text" ? m.content.text : "")).join("\n");
    expect(text).toContain("mcp-profile");
    expect(text).toContain("Grace is a rear admiral");
    expect(text).toContain("Grace writes compilers in COBOL");
    // An explicit containerTag argument wins over the header.
    const other = await project.getPrompt({ name: "context", arguments: { containerTag: "empty-tag" } });
    expect(JSON.stringify(other.messages)).toContain("Nothing is remembered yet in container 'empty-tag'");

    const spaces = await project.readResource({ uri: "supermemory://spaces" });
    const parsed = JSON.parse(textOf(spaces.contents[0]));
    expect(parsed.defaultContainerTag).toBe("mcp-profile");
    expect(parsed.spaces).toEqual(
      expect.arrayContaining([{ containerTag: "mcp-profile", documents: 0, memories: 2 }]),
    );
    const who = await ok(project, "whoAmI");
    expect(who.structured).toMatchObject({ kind: "admin", containerTags: null, project: "mcp-profile" });
  });

  it("lists and reads documents through the same store and presentation as REST", async () => {
    const added = await call("POST", "/v3/documents", {
      content: "Lighthouse log: the lamp was cleaned on Tuesday.",
      containerTag: "mcp-docs",
      customId: "lighthouse-log",
    });
    expect(added.status).toBe(200);
    const list = await ok(admin, "listDocuments", { containerTag: "mcp-docs" });
    expect(list.structured.pagination).toMatchObject({ totalItems: 1, currentPage: 1 });
    expect(list.structured.documents[0]).toMatchObject({ id: added.json.id, customId: "lighthouse-log" });
    expect(list.structured.documents[0].content).toBeUndefined();
    const rest = await call("GET", `/v3/documents/${added.json.id}`);
    const got = await ok(admin, "getDocument", { id: "lighthouse-log" });
    expect(got.structured.document).toMatchObject({
      id: added.json.id,
      containerTags: ["mcp-docs"],
      content: rest.json.content,
    });
    expect(got.text).toContain("Lighthouse log: the lamp was cleaned on Tuesday.");
    await refused(admin, "getDocument", { id: "no-such-document" }, /not_found/);
    const spaces = await ok(admin, "listSpaces");
    expect(spaces.structured.spaces).toEqual(
      // Its memory count is 0 or 1: the short document is kept as a memory too once processed.
      expect.arrayContaining([expect.objectContaining({ containerTag: "mcp-docs", documents: 1 })]),
    );
  });

  it("keeps a scoped key inside its container tags through every tool, resource and prompt", async () => {
    const secretDoc = await call("POST", "/v3/documents", {
      content: "Bob's secret plans",
      containerTag: "bob",
    });
    expect(secretDoc.status).toBe(200);
    expect(
      (
        await call("POST", "/v4/memories", {
          containerTag: "bob",
          memories: [{ content: "Bob hides the key under the mat" }],
        })
      ).status,
    ).toBe(201);
    const created = await call("POST", "/v3/auth/scoped-key", { containerTag: "alice" });
    expect(created.status).toBe(200);
    const key = created.json.key as string;

    const alice = await open(key);
    // No tag named: the key's own tag, not the global default.
    const saved = await ok(alice, "add_memory", { content: "Alice keeps bees" });
    expect(saved.structured.containerTag).toBe("alice");
    expect((await ok(alice, "recall", { query: "bees" })).structured.results[0].memory).toBe(
      "Alice keeps bees",
    );
    const who = await ok(alice, "whoAmI");
    expect(who.structured).toMatchObject({
      kind: "scoped",
      containerTags: ["alice"],
      defaultContainerTag: "alice",
    });

    const forbidden = /forbidden: this key may not use container tag 'bob'/;
    await refused(alice, "memory", { content: "x", containerTag: "bob" }, forbidden);
    await refused(
      alice,
      "add_memory",
      { content: "Bob hides the key under the mat", action: "forget", containerTag: "bob" },
      forbidden,
    );
    await refused(alice, "recall", { query: "key", containerTag: "bob" }, forbidden);
    await refused(alice, "search_memory", { query: "key", containerTag: "bob" }, forbidden);
    await refused(alice, "listMemories", { containerTag: "bob" }, forbidden);
    await refused(alice, "listDocuments", { containerTag: "bob" }, forbidden);
    await refused(alice, "getDocument", { id: secretDoc.json.id }, /not_found/);
    await refused(alice, "add_memory", { content: "x", containerTag: "sm_project_default" }, /forbidden/);
    const spaces = await ok(alice, "listSpaces");
    expect(spaces.structured.spaces).toEqual([{ containerTag: "alice", documents: 0, memories: 1 }]);
    await expect(alice.getPrompt({ name: "context", arguments: { containerTag: "bob" } })).rejects.toThrow(
      forbidden,
    );

    // The header cannot widen the scope either.
    const viaHeader = await open(key, { "x-sm-project": "bob" });
    await refused(viaHeader, "recall", { query: "key" }, forbidden);
    await refused(viaHeader, "add_memory", { content: "x" }, forbidden);
    await expect(viaHeader.readResource({ uri: "supermemory://profile" })).rejects.toThrow(forbidden);
    await expect(viaHeader.getPrompt({ name: "context", arguments: {} })).rejects.toThrow(forbidden);

    // Nothing of bob's changed.
    const bob = await call("POST", "/v4/memories/list", { containerTags: ["bob"] });
    const bobs = bob.json.memories.map((m: { memory: string; isForgotten: boolean }) => [
      m.memory,
      m.isForgotten,
    ]);
    expect(bobs).toContainEqual(["Bob hides the key under the mat", false]);
    // Bob's short document may be there too, kept word for word as a memory; nothing else, nothing forgotten.
    expect(
      bobs.filter(
        ([m, f]: [string, boolean]) =>
          f || (m !== "Bob hides the key under the mat" && m !== "Bob's secret plans"),
      ),
    ).toEqual([]);
  });

  it("refuses requests without a valid key, from foreign browser origins, and answers only POST", async () => {
    await expect(open(null)).rejects.toThrow(/401|unauthorized/i);
    await expect(open("sm_not_a_real_key_0123456789")).rejects.toThrow(/401|unauthorized/i);

    const initialize = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "curl", version: "1" } },
    };
    const post = (headers: Record<string, string>) =>
      fetch(`${service.url}/mcp`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...headers,
        },
        body: JSON.stringify(initialize),
      });
    const auth = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
    const noKey = await post({});
    expect(noKey.status).toBe(401);
    expect((await noKey.json()).code).toBe("unauthorized");

    const evil = await post({ ...auth, origin: "http://evil.example" });
    expect(evil.status).toBe(403);
    expect((await evil.json()).error).toMatch(/origin http:\/\/evil\.example/);
    // A rebound name: origin and Host agree, still not an allowed origin.
    const rebound = await post({
      ...auth,
      origin: "http://rebound.example:8787",
      host: "rebound.example:8787",
    });
    expect(rebound.status).toBe(403);
    const local = await post({ ...auth, origin: "http://localhost:5173" });
    expect(local.status).toBe(200);
    expect((await local.json()).result.serverInfo.name).toBe("supermemory");
    const plain = await post(auth);
    expect(plain.status).toBe(200);
    expect(plain.headers.get("mcp-session-id")).toBeNull();

    const get = await fetch(`${service.url}/mcp`, { headers: { ...auth, accept: "text/event-stream" } });
    expect(get.status).toBe(405);

    // Scoped keys may call /mcp and are counted by the rate limit like any other route.
    const created = await call("POST", "/v3/auth/scoped-key", { containerTag: "limited" });
    const limited = await post({ authorization: `Bearer ${created.json.key}` });
    expect(limited.status).toBe(200);
    expect(limited.headers.get("x-ratelimit-limit")).toBe("500");
  });

  it("lets scoped keys made before /mcp joined the default list use it, but not narrower keys", () => {
    const before = [
      "/v3/documents",
      "/v3/memories",
      "/v4/memories",
      "/v3/search",
      "/v4/search",
      "/v4/profile",
    ];
    expect(endpointAllowed("/mcp", before)).toBe(true);
    expect(endpointAllowed("/mcp", ["/v3/documents", "/v3/search"])).toBe(false);
    expect(endpointAllowed("/mcp", ["/mcp"])).toBe(true);
    expect(endpointAllowed("/mcpx", before)).toBe(false);
  });
});
