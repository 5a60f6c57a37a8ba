import { readFileSync } from "node:fs";
import path from "node:path";
import { toFile } from "supermemory";
import { afterAll, describe, expect, it } from "vitest";
import { deployment, stopDeployments } from "../support/deployment.ts";
import { FIXTURES_DIR } from "../support/fixtures.ts";
import { waitFor } from "../support/service.ts";

// Heavy extraction has its own task queue: with no worker serving it, a scanned PDF waits while text
// documents keep flowing; a heavy-only worker started later finishes the PDF.
describe("heavy extraction on its own task queue", () => {
  afterAll(stopDeployments);

  it("keeps light work flowing while heavy work waits for its own workers", async () => {
    const d = await deployment("queues");
    const api = await d.start("api");
    const light = await d.start("worker", { WORKER_QUEUES: "main" });

    const client = d.client(api.url);
    const scan = await toFile(readFileSync(path.join(FIXTURES_DIR, "pdf", "DA-1p.pdf")), "DA-1p.pdf");
    const { id: pdfId } = await client.documents.uploadFile({
      file: scan,
      containerTags: JSON.stringify(["q"]),
    });
    const texts = await Promise.all(
      [1, 2, 3].map((n) =>
        client.documents.add({ content: `Light document number ${n}.`, containerTag: "q" }),
      ),
    );
    for (const { id } of texts) {
      await waitFor(
        async () => ((await client.documents.get(id)).status === "done" ? true : undefined),
        "text done",
      );
    }
    // The PDF was identified on the main queue and now waits for a heavy worker.
    expect((await client.documents.get(pdfId)).status).toBe("extracting");

    const heavy = await d.start("worker", { WORKER_QUEUES: "heavy" });
    const pdf = await waitFor(
      async () => {
        const d = await client.documents.get(pdfId);
        return d.status === "done" || d.status === "failed" ? d : undefined;
      },
      "the PDF on the heavy worker",
      180_000,
    );
    expect(pdf.status).toBe("done");

    expect(await heavy.stop("SIGTERM")).toBe(0);
    expect(await light.stop("SIGTERM")).toBe(0);
    expect(await api.stop("SIGTERM")).toBe(0);
  }, 300_000);
});
