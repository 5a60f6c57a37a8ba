// Issue 68, "each document has a budget", through the real service: a 10 MB mail of 300 highly
// compressed .docx attachments (1.2 billion characters of text in all) is uploaded over HTTP. It ends
// `done` on its first try, its text and chunks within the caps and its fileMetadata naming the caps
// that cut it, searchable, while the process (API and worker in one) grows by less than 256 MB.

import { readFileSync } from "node:fs";
import Supermemory, { toFile } from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FIXTURES_DIR } from "../support/fixtures.ts";
import { MiB, manyDocxMail, repetitiveDocx } from "../support/hostile-files.ts";
import { sampleRss } from "../support/memory.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, untilProcessed } from "../support/service.ts";

const RSS_BUDGET = 256 * MiB;
// Small enough that the kept text embeds in seconds; the memory bound at the default caps is measured
// in test/pipeline/extract-budget.test.ts. The mail's first attachment alone passes both.
const MAX_EXTRACTED_CHARS = 200_000;
const MAX_CHUNKS_PER_DOCUMENT = 100;

/** A multipart/form-data body with one file and a container tag. */
function multipart(file: Buffer, filename: string, containerTag: string) {
  const boundary = "budget-test-boundary";
  const head = (name: string, extra = "") =>
    `--${boundary}\r\nContent-Disposition: form-data; name="${name}"${extra}\r\n`;
  return {
    type: `multipart/form-data; boundary=${boundary}`,
    bytes: Buffer.concat([
      Buffer.from(`${head("containerTag")}\r\n${containerTag}\r\n`),
      Buffer.from(`${head("file", `; filename="${filename}"`)}Content-Type: message/rfc822\r\n\r\n`),
      file,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]),
  };
}

describe("each document has a budget", () => {
  let service: TestService;
  let client: Supermemory;
  const simple = readFileSync(`${FIXTURES_DIR}/docx/simple.docx`);
  const upload = async (name: string, bytes: Buffer, containerTag = "budget") =>
    (await client.documents.uploadFile({ file: await toFile(bytes, name), containerTag })).id;

  beforeAll(async () => {
    service = await startTestService({
      env: {
        MAX_EXTRACTED_CHARS: String(MAX_EXTRACTED_CHARS),
        MAX_CHUNKS_PER_DOCUMENT: String(MAX_CHUNKS_PER_DOCUMENT),
      },
    });
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
    // Warmed up before the memory baseline is taken, by ordinary documents that take the same paths: two
    // .docx as long as the budget at once (both document embedding threads load their model copy), and a
    // mail of 300 small .docx (55,000 characters: its list of attachment names makes chunks of the model's
    // longest input, which grow the embedding threads' buffers once). The hostile mail may then cost what
    // it does itself.
    const long = repetitiveDocx(simple, 30);
    const ordinary: [string, Buffer][] = [
      ["long-1.docx", long],
      ["long-2.docx", long],
      ["small-attachments.eml", manyDocxMail(simple, 300, 1)],
    ];
    const warm = await Promise.all(
      ordinary.map(async ([name, bytes]) =>
        untilProcessed((i) => client.documents.get(i), await upload(name, bytes, "warm-up"), 300_000),
      ),
    );
    for (const doc of warm) expect(doc.status, doc.errorReason ?? "").toBe("done");
  });

  afterAll(async () => {
    await service?.stop();
  });

  it("a 10 MB mail of hundreds of compressed .docx ends done with capped text, says so, within +256 MB of RSS", async () => {
    const mail = manyDocxMail(simple, 300);
    expect(mail.length).toBeGreaterThan(9 * MiB);
    // The request body is built before the baseline, so what is measured is the service's cost, not the
    // test's as a client (the SDK's upload copies the file a few times on this side).
    const body = multipart(mail, "reports.eml", "budget");
    const before = process.memoryUsage.rss();
    const rss = sampleRss();
    const response = await fetch(`${service.url}/v3/documents/file`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_ADMIN_KEY}`, "content-type": body.type },
      body: body.bytes,
    });
    expect(response.status).toBe(200);
    const { id } = (await response.json()) as { id: string };
    const doc = await untilProcessed((i) => client.documents.get(i), id, 300_000);
    const peak = rss.stop();
    const rise = peak - before;
    console.log(
      `RSS ${Math.round(before / MiB)} MiB before, peak ${Math.round(peak / MiB)} MiB (+${Math.round(rise / MiB)} MiB); ${doc.content?.length} characters kept`,
    );

    expect(doc.status, doc.errorReason ?? "").toBe("done");
    expect(doc.errorReason ?? null).toBeNull();
    const fileMetadata = (doc as unknown as { fileMetadata: Record<string, unknown> }).fileMetadata;
    expect(fileMetadata).toMatchObject({
      truncated: "MAX_EXTRACTED_CHARS, MAX_CHUNKS_PER_DOCUMENT",
      keptChars: doc.content?.length,
      keptChunks: MAX_CHUNKS_PER_DOCUMENT,
      attachmentCount: 300,
    });
    // The first attachment filled the budget: the other 299 were not read.
    expect(fileMetadata.unreadAttachments).toBe(299);
    expect(String(fileMetadata.note)).toMatch(
      /^text cut at the cap of 200,000 characters per document \(MAX_EXTRACTED_CHARS\): the first 200,000 are kept and searchable, 299 attachments were not read; chunks stopped at the cap of 100 per document \(MAX_CHUNKS_PER_DOCUMENT\)/,
    );
    expect(doc.content?.length).toBeLessThanOrEqual(MAX_EXTRACTED_CHARS);
    expect(doc.content).toContain("Subject: Quarterly reports");
    expect(doc.content).toContain("These are a few of my favorite things");

    const chunks = (await client.get(`/v3/documents/${id}/chunks`)) as {
      chunks: { position: number; metadata: Record<string, unknown>; embeddingModel: string | null }[];
    };
    expect(chunks.chunks).toHaveLength(MAX_CHUNKS_PER_DOCUMENT);
    expect(chunks.chunks.every((c) => c.embeddingModel)).toBe(true);
    expect(chunks.chunks.at(-1)?.metadata.source).toBe("attachment:report-1.docx");

    // Searchable like any other document.
    const found = await client.search.documents({
      q: "favorite things parrots hockey",
      containerTags: ["budget"],
    });
    expect(found.results.map((r) => r.documentId)).toContain(id);

    expect(rise).toBeLessThan(RSS_BUDGET);
  });
});
