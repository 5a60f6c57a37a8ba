import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, TEST_ADMIN_KEY, type TestService, untilProcessed } from "../support/service.ts";

// An AI assistant's memory tools, as toolkits build them on the official SDK, with no LLM configured:
// `addMemory` saves a document, `searchMemories` searches /v4/search (hybrid, threshold 0.6), `getProfile`
// reads the profile, `memoryForget` forgets by exact content (or by id).
describe("an assistant's remember → recall → forget through the official SDK, without an LLM", () => {
  let service: TestService;
  let client: Supermemory;
  const tag = "assistant_user_1";

  beforeAll(async () => {
    service = await startTestService();
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
  });
  afterAll(async () => {
    await service?.stop();
  });

  const remember = async (content: string) => {
    const added = await client.documents.add({ content, containerTag: tag });
    const doc = await untilProcessed((id) => client.documents.get(id), added.id);
    expect(doc.status).toBe("done");
    return added.id;
  };
  const recall = (q: string) =>
    client.search.memories({ q, containerTag: tag, searchMode: "hybrid", threshold: 0.6, limit: 10 });
  /** Every text a search answers with, as a memory or as a chunk. */
  const texts = (found: Awaited<ReturnType<typeof recall>>) =>
    found.results.map((r) => (r as { memory?: string }).memory ?? (r as { chunk?: string }).chunk ?? "");
  /** Every chunk text /v3/search answers with. */
  const documentTexts = async (q: string) =>
    (await client.search.documents({ q, containerTags: [tag] })).results.flatMap((r) =>
      r.chunks.map((c) => c.content),
    );
  const profile = async () => (await client.profile({ containerTag: tag })).profile;

  it("finds a saved fact as a memory above 0.6, shows it in the profile, and forgets it by exact content", async () => {
    const fact = "My favourite programming language is OCaml and I live in Lisbon.";
    await remember(fact);

    const found = await recall("Which programming language do I like best?");
    const asMemory = found.results.find((r) => (r as { memory?: string }).memory === fact);
    expect(asMemory, JSON.stringify(found.results)).toBeDefined();
    expect(asMemory?.similarity).toBeGreaterThanOrEqual(0.6);
    // Shown once: the document's own chunk with the very same text is not listed beside the memory.
    expect(texts(found).filter((t) => t === fact)).toHaveLength(1);
    // A lasting fact about the user: static.
    expect((await profile()).static).toContain(fact);

    const forgotten = await client.memories.forget({ containerTag: tag, content: fact });
    expect(forgotten).toMatchObject({ id: asMemory?.id, forgotten: true });

    const after = await recall("Which programming language do I like best?");
    expect(texts(after).some((t) => t.includes("OCaml"))).toBe(false);
    expect(await documentTexts("OCaml Lisbon")).not.toContain(fact);
    const p = await profile();
    expect([...p.static, ...p.dynamic].some((t) => t.includes("OCaml"))).toBe(false);
  });

  it("forgets by id, and with both id and content the id decides", async () => {
    const plan = "Tomorrow I am flying to Oslo for the robotics conference.";
    const habit = "I drink green tea every morning.";
    await remember(plan);
    await remember(habit);
    // Something recent or planned is dynamic; a habit in the first person is static.
    const p = await profile();
    expect(p.dynamic).toContain(plan);
    expect(p.static).toContain(habit);

    const found = await recall("When is my trip to Oslo?");
    const memory = found.results.find((r) => (r as { memory?: string }).memory === plan);
    expect(memory, JSON.stringify(found.results)).toBeDefined();
    // Both given, as the SDK's types allow: the id decides and the other text is left alone.
    const forgotten = await client.memories.forget({
      containerTag: tag,
      id: memory?.id as string,
      content: habit,
    });
    expect(forgotten).toMatchObject({ id: memory?.id, forgotten: true });

    const after = await recall("When is my trip to Oslo?");
    expect(texts(after).some((t) => t.includes("Oslo"))).toBe(false);
    expect(await documentTexts("Oslo robotics conference")).not.toContain(plan);
    const left = await profile();
    expect(left.dynamic).not.toContain(plan);
    expect(left.static).toContain(habit);
    expect(texts(await recall("What do I drink in the morning?"))).toContain(habit);

    // Forgetting what is already gone says so.
    await expect(client.memories.forget({ containerTag: tag, content: plan })).rejects.toMatchObject({
      status: 404,
    });
  });

  it("forgets a text saved as a document even when it was too long to be kept as a memory", async () => {
    const note = `${"This meeting note records what the team decided about the quarterly roadmap. ".repeat(10)}The launch moves to May.`;
    const id = await remember(note);
    const forgotten = await client.memories.forget({ containerTag: tag, content: note });
    expect(forgotten).toMatchObject({ id, forgotten: true });
    await expect(client.documents.get(id)).rejects.toMatchObject({ status: 404 });
  });
});
