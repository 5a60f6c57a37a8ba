// Issue 23, "a hostile file fails alone", through the real service: hostile uploads end `failed` with
// their reason while a normal document uploaded beside them ends `done`.

import { readFileSync } from "node:fs";
import Supermemory, { toFile } from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FIXTURES_DIR } from "../support/fixtures.ts";
import { deflateBomb, docxWith, nestedMail, pdfWith, pixelBomb, zlibBomb } from "../support/hostile-files.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, untilProcessed } from "../support/service.ts";

describe("hostile uploads", () => {
  let service: TestService;
  let client: Supermemory;
  beforeAll(async () => {
    service = await startTestService();
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
  });
  afterAll(async () => {
    await service?.stop();
  });

  it("each fails with its reason while a normal document beside them is processed", async () => {
    const hostile: [string, Buffer, RegExp][] = [
      [
        "bomb.docx",
        docxWith({ name: "word/document.xml", method: 8, data: deflateBomb(400), crc: 0, size: 2048 }),
        /inflates past the 64 MiB cap per part/,
      ],
      ["bomb.pdf", pdfWith(zlibBomb(1024)), /inflates past the 256 MiB cap per stream/],
      ["huge.png", pixelBomb(50_000, 50_000), /the image is too large to read/],
      ["nested.eml", nestedMail(100), /past the cap of 50 levels/],
    ];
    const upload = async (name: string, bytes: Buffer) =>
      (await client.documents.uploadFile({ file: await toFile(bytes, name), containerTag: "hostile" })).id;
    const ids = await Promise.all(hostile.map(([name, bytes]) => upload(name, bytes)));
    const normal = await upload("simple.docx", readFileSync(`${FIXTURES_DIR}/docx/simple.docx`));
    const docs = await Promise.all(
      ids.map((id) => untilProcessed((i) => client.documents.get(i), id, 300_000)),
    );
    for (const [i, doc] of docs.entries()) {
      const [name, , reason] = hostile[i] as [string, Buffer, RegExp];
      expect(doc.status, name).toBe("failed");
      expect(doc.errorReason ?? "", name).toMatch(reason);
      // Non-retryable: failed on the first try, not after the activity's retries ran out.
      expect(doc.errorReason ?? "", name).not.toMatch(/gave up after retries/);
    }
    const done = await untilProcessed((i) => client.documents.get(i), normal, 300_000);
    expect(done.status, done.errorReason ?? "").toBe("done");
    expect(done.content).toContain("favorite things");
  });
});
