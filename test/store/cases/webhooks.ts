import { expect, it } from "vitest";
import { createConnection, emptyCounts, finishSyncRun, startSyncRun } from "../../../store/connections.ts";
import * as hooks from "../../../store/webhooks.ts";
import { addDocument, type StoreOf } from "./support.ts";

export function webhookCases(store: StoreOf) {
  it("keeps webhooks and finds the enabled ones subscribed to an event", async () => {
    const { db } = store();
    const global = await hooks.createWebhook(db, {
      url: "https://example.org/all",
      sealedSecret: "sealed",
      containerTags: [],
      events: ["document.done", "document.failed"],
    });
    const tagged = await hooks.createWebhook(db, {
      url: "https://example.org/team",
      sealedSecret: "sealed",
      containerTags: ["hook-team"],
      events: ["document.done"],
    });
    const ids = async (event: hooks.WebhookEventType) =>
      (await hooks.webhooksFor(db, event)).map((h) => h.id);
    expect(await ids("document.done")).toEqual(expect.arrayContaining([global.id, tagged.id]));
    expect(await ids("document.failed")).toContain(global.id);
    expect(await ids("document.failed")).not.toContain(tagged.id);
    expect(hooks.webhookCoversTags(global, ["anything"])).toBe(true);
    expect(hooks.webhookCoversTags(tagged, ["hook-team", "x"])).toBe(true);
    expect(hooks.webhookCoversTags(tagged, ["hook-other"])).toBe(false);

    expect(await hooks.updateWebhook(db, tagged.id, { enabled: false })).toMatchObject({ enabled: false });
    expect(await ids("document.done")).not.toContain(tagged.id);
    expect((await hooks.findWebhook(db, tagged.id))?.url).toBe("https://example.org/team");
    expect((await hooks.listWebhooks(db)).map((h) => h.id)).toEqual(
      expect.arrayContaining([global.id, tagged.id]),
    );
    expect(await hooks.deleteWebhook(db, tagged.id)).toBe(true);
    expect(await hooks.deleteWebhook(db, tagged.id)).toBe(false);
    expect(await hooks.findWebhook(db, tagged.id)).toBeUndefined();
  });

  it("records a delivery once per event and counts its attempts until delivered or given up", async () => {
    const { db } = store();
    const hook = await hooks.createWebhook(db, {
      url: "https://example.org/deliveries",
      sealedSecret: "sealed",
      containerTags: [],
      events: ["document.done"],
    });
    const delivery = { webhookId: hook.id, event: "document.done", payload: { documentId: "d" } };
    expect(await hooks.insertDelivery(db, { id: "delivery-1", ...delivery })).toBe(true);
    // The same event again (a retried activity) is not a second delivery.
    expect(await hooks.insertDelivery(db, { id: "delivery-1", ...delivery })).toBe(false);
    await Promise.all([
      hooks.recordAttempt(db, "delivery-1", { delivered: false, responseStatus: 500, error: "server error" }),
      hooks.recordAttempt(db, "delivery-1", { delivered: false, error: "timeout" }),
    ]);
    expect(await hooks.findDelivery(db, "delivery-1")).toMatchObject({ attempts: 2, status: "pending" });
    await hooks.recordAttempt(db, "delivery-1", { delivered: true, responseStatus: 200 });
    await hooks.markDeliveryFailed(db, "delivery-1", "too late");
    expect(await hooks.findDelivery(db, "delivery-1")).toMatchObject({
      attempts: 3,
      status: "delivered",
      responseStatus: 200,
      lastError: null,
    });

    await hooks.insertDelivery(db, { id: "delivery-2", ...delivery });
    await hooks.markDeliveryFailed(db, "delivery-2", "gave up after retries");
    expect(await hooks.findDelivery(db, "delivery-2")).toMatchObject({
      status: "failed",
      lastError: "gave up after retries",
    });
    expect((await hooks.listDeliveries(db, hook.id)).map((d) => d.id).sort()).toEqual([
      "delivery-1",
      "delivery-2",
    ]);
  });

  it("describes the subjects of events: a document, and a sync run with its connection", async () => {
    const { db } = store();
    const { document } = await addDocument(db, {
      source: "event subject",
      customId: "hook-doc",
      containerTags: ["hook-subject"],
      metadata: { k: 1 },
    });
    expect(await hooks.documentForEvent(db, document.id)).toMatchObject({
      id: document.id,
      customId: "hook-doc",
      status: "queued",
      containerTags: ["hook-subject"],
      metadata: { k: 1 },
    });
    expect(await hooks.documentForEvent(db, "no-such-document")).toBeUndefined();

    const connection = await createConnection(db, {
      provider: "s3",
      containerTags: ["hook-subject"],
      metadata: {},
      sealedSecrets: null,
      syncIntervalMinutes: 60,
    });
    const run = await startSyncRun(db, {
      connectionId: connection.id,
      trigger: "create",
      workflowId: "wf-hook",
    });
    await finishSyncRun(db, run.id, { status: "done", counts: { ...emptyCounts(), added: 2 } });
    const subject = await hooks.syncRunWithConnection(db, run.id);
    expect(subject?.connection.id).toBe(connection.id);
    expect(subject?.run).toMatchObject({ status: "done", counts: { added: 2 } });
  });
}
