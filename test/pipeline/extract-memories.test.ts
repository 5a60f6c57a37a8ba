import { describe, expect, it } from "vitest";
import { buildExtractionMessages, parseExtractionAnswer } from "../../pipeline/llm/extract-memories.ts";

describe("memory extraction answers", () => {
  it("accepts the asked shape, bare or in a Markdown fence, with defaults filled in", () => {
    const answer =
      '{"memories":[{"content":" Alice likes tea "},{"content":"Bob is 40","isStatic":true,"relation":{"type":"derives","memoryId":"m1"}}]}';
    for (const text of [answer, `\`\`\`json\n${answer}\n\`\`\``]) {
      const parsed = parseExtractionAnswer(text);
      expect(parsed).toEqual({
        ok: true,
        memories: [
          { content: "Alice likes tea", isStatic: false, relation: undefined },
          { content: "Bob is 40", isStatic: true, relation: { type: "derives", memoryId: "m1" } },
        ],
      });
    }
  });

  it("names what is wrong with a malformed answer", () => {
    expect(parseExtractionAnswer("Alice likes tea")).toMatchObject({ ok: false, error: /not valid JSON/ });
    expect(parseExtractionAnswer('{"memories":[{"content":""}]}')).toMatchObject({
      ok: false,
      error: /memories\.0\.content/,
    });
    expect(
      parseExtractionAnswer('{"memories":[{"content":"x","relation":{"type":"replaces","memoryId":"m"}}]}'),
    ).toMatchObject({ ok: false, error: /memories\.0\.relation\.type/ });
    expect(parseExtractionAnswer("[]")).toMatchObject({ ok: false, error: /\(root\)/ });
  });

  it("shows the model the known memories with their ids and the entity hint", () => {
    const [system, user] = buildExtractionMessages({
      containerTag: "user_1",
      entityContext: "Alice, a nurse in Berlin",
      title: "Diary",
      content: "Moved today.",
      known: [{ id: "m1", content: "Alice lives in Paris", isStatic: true }],
    });
    expect(system?.content).toMatch(/"updates"/);
    expect(user?.content).toContain("- id m1 (static): Alice lives in Paris");
    expect(user?.content).toContain("ABOUT THE ENTITY: Alice, a nurse in Berlin");
    expect(user?.content).toContain("TITLE: Diary\nMoved today.");
  });
});
