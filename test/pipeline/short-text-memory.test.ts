import { describe, expect, it } from "vitest";
import { isStaticFact, shortTextMemory } from "../../pipeline/short-text-memory.ts";

describe("short texts kept as memories without an LLM", () => {
  it("keeps a text of at most the limit, trimmed, and nothing longer or empty", () => {
    expect(shortTextMemory("  My name is Ada.  ", 600)).toEqual({
      content: "My name is Ada.",
      isStatic: true,
    });
    expect(shortTextMemory("x".repeat(601), 600)).toBeUndefined();
    expect(shortTextMemory("x".repeat(600), 600)?.content).toHaveLength(600);
    expect(shortTextMemory("   ", 600)).toBeUndefined();
    expect(shortTextMemory("My name is Ada.", 0)).toBeUndefined();
  });

  it("calls first-person statements without a mark of time static, and the rest dynamic", () => {
    for (const lasting of [
      "My favourite programming language is OCaml and I live in Lisbon.",
      "I drink green tea every morning.",
      "I'm a vegetarian.",
      "We have two cats.",
    ])
      expect(isStaticFact(lasting), lasting).toBe(true);
    for (const recent of [
      "Tomorrow I am flying to Oslo for the robotics conference.",
      "I met Anna last week.",
      "My dentist appointment is on Friday at 3pm.",
      "I'm moving to Berlin next month.",
      "I'm reading Dune.",
      "I was in Rome 3 days ago.",
      "The report is due 2026-12-01 and I have to finish it.",
      "The sky is blue.",
      "Anna likes jazz.",
    ])
      expect(isStaticFact(recent), recent).toBe(false);
  });
});
