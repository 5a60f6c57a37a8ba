import { readFileSync } from "node:fs";
import { join } from "node:path";
import Supermemory, { toFile } from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeLlm, startFakeLlm } from "../support/fake-llm.ts";
import { FIXTURES_DIR } from "../support/fixtures.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, untilProcessed } from "../support/service.ts";

// A photo without text, with a vision-capable LLM configured (LLM_VISION): kept by what is known about it
// plus the model's caption, so it is found by what it shows.
describe("a photo's caption from a vision-capable LLM", () => {
  let llm: FakeLlm;
  let service: TestService;
  let client: Supermemory;
  let failNext = false;

  beforeAll(async () => {
    llm = await startFakeLlm((messages) => {
      if (failNext) {
        failNext = false;
        return { status: 500, body: '{"error":{"message":"model overloaded"}}' };
      }
      return JSON.stringify(messages).includes('"image_url"')
        ? "A pink flower with yellow stamens in a sunny garden."
        : "{}";
    });
    service = await startTestService({
      env: { LLM_BASE_URL: llm.url, LLM_VISION: "true", MEMORY_EXTRACTION: "false" },
    });
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
  });
  afterAll(async () => {
    await service?.stop();
    await llm?.close();
  });

  const upload = async (name: string) => {
    const { id } = await client.documents.uploadFile({
      file: await toFile(readFileSync(join(FIXTURES_DIR, "image", "example.jpg")), name),
      containerTag: "captions",
    });
    return untilProcessed((i) => client.documents.get(i), id);
  };

  it("sends the picture and keeps the caption, searchable", async () => {
    const doc = await upload("IMG_2003.jpg");
    expect(doc.status, (doc as { errorReason?: string }).errorReason ?? "").toBe("done");
    expect(doc.content).toContain("Caption: A pink flower with yellow stamens in a sunny garden.");
    expect((doc as unknown as { fileMetadata: Record<string, unknown> }).fileMetadata).toMatchObject({
      caption: "A pink flower with yellow stamens in a sunny garden.",
      camera: "Canon PowerShot S40",
    });
    const sent = JSON.stringify(llm.requests.at(-1)?.messages);
    expect(sent).toContain("data:image/jpeg;base64,");
    const found = await client.search.documents({ q: "flower garden", containerTags: ["captions"] });
    expect(found.results[0]?.documentId).toBe(doc.id);
  });

  it("keeps the photo without a caption, saying why, when the model fails", async () => {
    failNext = true;
    const doc = await upload("IMG_2004.jpg");
    expect(doc.status).toBe("done");
    expect(doc.content).not.toContain("Caption:");
    expect((doc as unknown as { fileMetadata: Record<string, unknown> }).fileMetadata.captionError).toMatch(
      /500/,
    );
  });
});
