import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeLlm, startFakeLlm } from "../support/fake-llm.ts";
import { caller } from "../support/http.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, untilProcessed } from "../support/service.ts";

// Memories from documents, with a local server answering as an OpenAI-compatible chat endpoint. Each
// document says in its text how the fake model should answer, so the cases do not depend on order.
describe("memory extraction from documents", () => {
  let service: TestService;
  let llm: FakeLlm;
  let client: Supermemory;
  const call = caller(() => service.url);
  /** How many answers each case's document has been given. */
  const answered: Record<string, number> = {};

  const documentText = (messages: { role: string; content: string }[]) =>
    messages.find((m) => m.role === "user")?.content ?? "";
  const knownId = (prompt: string, fragment: string) =>
    new RegExp(`- id (\\S+)(?: \\(static\\))?: [^\\n]*${fragment}`).exec(prompt)?.[1];

  beforeAll(async () => {
    llm = await startFakeLlm((messages) => {
      const prompt = documentText(messages);
      const kase = /CASE-(\w+)/.exec(prompt)?.[1] ?? "none";
      answered[kase] = (answered[kase] ?? 0) + 1;
      if (kase === "MOVE") {
        const paris = knownId(prompt, "lives in Paris");
        const nurse = knownId(prompt, "works as a nurse");
        return JSON.stringify({
          memories: [
            {
              content: "Alice lives in Berlin",
              isStatic: true,
              relation: paris ? { type: "updates", memoryId: paris } : null,
            },
            {
              content: "Alice works night shifts at the Charité hospital",
              isStatic: false,
              relation: nurse ? { type: "extends", memoryId: nurse } : null,
            },
            {
              content: "Alice probably needs to speak German at work",
              relation: { type: "derives", memoryId: "no-such-memory" },
            },
          ],
        });
      }
      // A fenced answer in the wrong shape first, then a good one: the retry repairs it.
      if (kase === "REPAIR")
        return answered[kase] === 1
          ? '```json\n{"facts": ["Alice owns a bicycle"]}\n```'
          : '{"memories":[{"content":"Alice owns a red bicycle","isStatic":true,"relation":null}]}';
      if (kase === "GARBLED") return "Sure! Here are the memories: Alice likes tea.";
      if (kase === "DOWN") return { status: 503, body: '{"error":{"message":"model is loading"}}' };
      return '{"memories":[]}';
    });
    service = await startTestService({ env: { LLM_BASE_URL: llm.url, LLM_MODEL: "fake-extractor" } });
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
    const created = await call("POST", "/v4/memories", {
      containerTag: "alice",
      memories: [
        { content: "Alice lives in Paris", isStatic: true },
        { content: "Alice works as a nurse", isStatic: true },
      ],
    });
    expect(created.status).toBe(201);
  });

  afterAll(async () => {
    await service?.stop();
    await llm?.close();
  });

  async function addAndWait(content: string, containerTag = "alice") {
    const { id } = await client.add({ content, containerTag });
    const doc = await untilProcessed((i) => client.documents.get(i), id);
    const full = await call("GET", `/v3/documents/${id}`);
    return { id, doc, full: full.json };
  }

  const memoriesFound = async (q: string, containerTag = "alice") =>
    (await client.search.memories({ q, containerTag, limit: 10 })).results.flatMap((r) =>
      r.memory ? [r] : [],
    );

  it("turns a document into memories related to what the container already remembers", async () => {
    const { id, doc, full } = await addAndWait(
      "CASE-MOVE Diary, March 2026. Alice finally moved from Paris to Berlin and now works night shifts at the Charité.",
    );
    expect(doc.status).toBe("done");
    expect(full.memoryExtraction).toMatchObject({ status: "done", memories: 3 });

    // The model saw the container's memories, with ids it could relate to.
    const prompt = documentText(
      llm.requests.find((r) => /CASE-MOVE/.test(documentText(r.messages)))?.messages ?? [],
    );
    expect(prompt).toContain("Alice lives in Paris");
    expect(prompt).toContain("CONTAINER: alice");

    // "updates": Berlin is a new version of the Paris memory, which is no longer returned.
    const home = await memoriesFound("Where does Alice live?");
    const berlin = home.find((r) => r.memory === "Alice lives in Berlin");
    expect(berlin).toMatchObject({ version: 2 });
    expect(home.map((r) => r.memory)).not.toContain("Alice lives in Paris");
    const history = await client.search.memories({
      q: "Where does Alice live?",
      containerTag: "alice",
      include: { relatedMemories: true },
    });
    const withContext = history.results.find((r) => r.memory === "Alice lives in Berlin") as unknown as {
      context?: { parents?: { memory: string; relation: string }[] };
    };
    expect(withContext.context?.parents?.map((p) => p.memory)).toContain("Alice lives in Paris");

    // "extends" links to the nurse memory; a relation to an unknown id is dropped, the fact kept.
    const nurse = (
      await client.search.memories({
        q: "Alice works as a nurse",
        containerTag: "alice",
        include: { relatedMemories: true },
      })
    ).results.find((r) => r.memory === "Alice works as a nurse") as unknown as {
      context?: { related?: { memory: string; relation: string }[] };
    };
    expect(nurse.context?.related).toContainEqual(
      expect.objectContaining({
        memory: "Alice works night shifts at the Charité hospital",
        relation: "extends",
      }),
    );
    const work = (await memoriesFound("night shifts hospital")).map((r) => r.memory);
    expect(work).toContain("Alice works night shifts at the Charité hospital");
    expect(work).toContain("Alice probably needs to speak German at work");

    // Static facts from the model reach the profile.
    const { profile } = await client.profile({ containerTag: "alice" });
    expect(profile.static).toContain("Alice lives in Berlin");
    expect(profile.static).not.toContain("Alice lives in Paris");
    expect(profile.dynamic).toContain("Alice works night shifts at the Charité hospital");

    // Reprocessing the same document does not write the same memories twice.
    const before = answered.MOVE;
    await call("PATCH", `/v3/documents/${id}`, {
      content:
        "CASE-MOVE Diary, March 2026 (edited). Alice moved from Paris to Berlin; night shifts at the Charité.",
    });
    await untilProcessed(async (i) => {
      const d = (await call("GET", `/v3/documents/${i}`)).json;
      return d.memoryExtraction?.run > full.memoryExtraction.run ? d : { status: "waiting" };
    }, id);
    expect(answered.MOVE).toBeGreaterThan(before as number);
    const berlins = (await memoriesFound("Where does Alice live?")).filter(
      (r) => r.memory === "Alice lives in Berlin",
    );
    expect(berlins).toHaveLength(1);
  });

  it("asks again after a malformed answer and uses the repaired one", async () => {
    const { doc, full } = await addAndWait("CASE-REPAIR Alice bought a red bicycle for commuting.");
    expect(doc.status).toBe("done");
    expect(answered.REPAIR).toBe(2);
    // The second request carried the first answer and what was wrong with it.
    const retry = llm.requests.filter((r) => /CASE-REPAIR/.test(documentText(r.messages)))[1];
    expect(retry?.messages.at(-1)?.content).toMatch(/JSON not in the asked shape: memories/);
    expect(full.memoryExtraction).toMatchObject({ status: "done", memories: 1 });
    expect((await memoriesFound("bicycle")).map((r) => r.memory)).toContain("Alice owns a red bicycle");
  });

  it("skips memories, never the document, when every answer is malformed", async () => {
    const { id, doc, full } = await addAndWait("CASE-GARBLED Alice drinks green tea every morning.");
    expect(doc.status).toBe("done");
    expect(answered.GARBLED).toBe(3);
    expect(full.memoryExtraction).toMatchObject({ status: "skipped", memories: 0 });
    expect(full.memoryExtraction.reason).toMatch(/after 3 attempts: not valid JSON/);
    // The document itself is searchable as usual.
    const found = await client.search.documents({ q: "green tea every morning", containerTags: ["alice"] });
    expect(found.results.map((r) => r.documentId)).toContain(id);
  });

  it("finishes the document when the endpoint keeps failing, and says why it has no memories", async () => {
    const { doc, full } = await addAndWait("CASE-DOWN Alice adopted a cat named Miso.");
    expect(doc.status).toBe("done");
    // Temporal retried the activity (3 attempts), each asking once.
    expect(answered.DOWN).toBe(3);
    expect(full.memoryExtraction).toMatchObject({ status: "failed", memories: 0 });
    expect(full.memoryExtraction.reason).toMatch(/503/);
  }, 120_000);

  it("keeps memories inside the document's own containers", async () => {
    const { full } = await addAndWait("CASE-MOVE Bob's note about Alice moving to Berlin.", "bob");
    expect(full.memoryExtraction).toMatchObject({ status: "done" });
    // In bob's container there was no Paris memory to update: Berlin is a first version there.
    const bob = await memoriesFound("Where does Alice live?", "bob");
    expect(bob.find((r) => r.memory === "Alice lives in Berlin")).toMatchObject({ version: 1 });
    const alice = await memoriesFound("Where does Alice live?");
    expect(alice.filter((r) => r.memory === "Alice lives in Berlin")).toHaveLength(1);
  });
});
