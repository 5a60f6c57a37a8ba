// Fair shares between connections, end to end with a real S3-compatible server: one connection's big first
// sync must not hold back another connection's first sync, its incremental sync, or a document added through
// the API. Admission (store/admission.ts) gives each free slot to the fairness key with the fewest runs in
// flight (a connection's documents share its key), and single adds go before bulk work. With two slots, the
// big connection's backlog is still far from drained when the small one's documents are done: an order, not
// a time, is what this checks.

import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { caller } from "../support/http.ts";
import { type S3TestServer, startS3Server } from "../support/s3-server.ts";
import {
  startTestService,
  TEST_ADMIN_KEY,
  type TestService,
  untilProcessed,
  waitFor,
} from "../support/service.ts";

const BIG = 300;
const SMALL = 5;

describe("fair shares between connections", () => {
  let service: TestService;
  let s3: S3TestServer;
  let client: Supermemory;
  const call = caller(() => service.url);

  beforeAll(async () => {
    s3 = await startS3Server({ buckets: ["archive", "desk"] });
    for (let i = 0; i < BIG; i++)
      await s3.putObject(
        "archive",
        `old/${i}.txt`,
        `Archived memo ${i}: the harbour log for shift ${i} is filed.`,
      );
    for (let i = 0; i < SMALL; i++)
      await s3.putObject("desk", `now/${i}.txt`, `Desk note ${i}: call the ferry office about berth ${i}.`);
    service = await startTestService({ env: { MAX_DOCUMENTS_IN_FLIGHT: "2" } });
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
  }, 180_000);
  afterAll(async () => {
    await service?.stop();
    await s3?.stop();
  });

  const connect = (bucket: string, containerTag: string) =>
    client.connections.create("s3", {
      containerTag,
      metadata: {
        bucket,
        endpoint: s3.endpoint,
        accessKeyId: s3.accessKeyId,
        secretAccessKey: s3.secretAccessKey,
      },
    });
  const documentsOf = (containerTag: string) =>
    client.connections.listDocuments("s3", { containerTags: [containerTag] });
  const unfinished = (docs: { status: string }[]) =>
    docs.filter((d) => d.status !== "done" && d.status !== "failed").length;
  const allDone = async (containerTag: string, count: number) =>
    waitFor(
      async () => {
        const docs = await documentsOf(containerTag);
        return docs.length === count && docs.every((d) => d.status === "done") ? docs : undefined;
      },
      `${count} documents of ${containerTag} done`,
      180_000,
    );

  it("serves a small connection's syncs and the API's adds while a big first sync is queued", async () => {
    const big = await connect("archive", "archive-team");
    // The big sync has saved most of its objects, and they wait for the two slots.
    await waitFor(async () => {
      const docs = await documentsOf("archive-team");
      return docs.length >= BIG / 2 && unfinished(docs) >= BIG / 3 ? true : undefined;
    }, "the big connection's backlog");

    const small = await connect("desk", "desk-team");
    const { id: added } = await client.documents.add({
      content: "Typed in by hand: the ferry office answers after nine.",
      containerTag: "desk-team",
    });
    // (The connection's documents: the one added through the API is not the connection's.)
    await allDone("desk-team", SMALL);
    expect((await untilProcessed((i) => client.documents.get(i), added, 120_000)).status).toBe("done");
    // The big connection's first sync is nowhere near done.
    const behind = unfinished(await documentsOf("archive-team"));
    expect(behind).toBeGreaterThan(BIG / 4);

    // The small connection's next (incremental) sync goes ahead of the backlog too.
    await s3.putObject("desk", "now/late.txt", "Desk note, late: the ferry leaves from berth nine tomorrow.");
    const synced = await call("POST", `/v3/connections/${small.id}/sync`, {});
    expect(synced.status, synced.text).toBeLessThan(300);
    await allDone("desk-team", SMALL + 1);
    expect(unfinished(await documentsOf("archive-team"))).toBeGreaterThan(BIG / 5);

    // Disconnecting the big connection takes its queued documents with it.
    const removed = await call("DELETE", `/v3/connections/${big.id}`);
    expect(removed.status, removed.text).toBeLessThan(300);
    const left = await call("POST", "/v3/documents/list", { containerTags: ["archive-team"] });
    expect(left.json.pagination.totalItems, left.text).toBe(0);
  });
});
