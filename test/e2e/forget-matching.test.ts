import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { caller } from "../support/http.ts";
import { startTestService, type TestService } from "../support/service.ts";

interface Candidate {
  id: string;
  memory: string;
  score: number;
}

// POST /v4/memories/forget-matching on the real service: selection by search with a threshold, a dry run that
// answers exactly what the real run forgets, scoped keys kept to their tags.
describe("forget matching", () => {
  let service: TestService;
  const call = caller(() => service.url);

  beforeAll(async () => {
    service = await startTestService({ env: { MEMORY_EXTRACTION: "false" } });
  }, 180_000);
  afterAll(async () => {
    await service?.stop();
  });

  const TITAN = [
    "Project Titan ships its first rocket prototype in March",
    "The Project Titan budget was cut by twenty percent",
    "Alice leads the Project Titan design reviews every Friday",
  ];
  const TITAN_STATIC = "Project Titan is the codename of the new satellite launcher";
  const OTHER = ["Bob runs a marathon every spring", "The office cafeteria serves lasagne on Tuesdays"];
  const OTHER_STATIC = "Alice prefers green tea over coffee";

  /** A container with the Titan memories and unrelated ones; answers the ids by content. */
  const seed = async (containerTag: string) => {
    const memories = [
      ...TITAN.map((content) => ({ content })),
      { content: TITAN_STATIC, isStatic: true },
      ...OTHER.map((content) => ({ content })),
      { content: OTHER_STATIC, isStatic: true },
    ];
    const res = await call("POST", "/v4/memories", { containerTag, memories });
    expect(res.status, res.text).toBe(201);
    return new Map<string, string>(
      res.json.memories.map((m: { id: string; memory: string }) => [m.memory, m.id]),
    );
  };
  const forget = async (body: Record<string, unknown>, key?: string) => {
    const res = await call("POST", "/v4/memories/forget-matching", body, key);
    expect(res.status, res.text).toBe(200);
    return res.json as {
      dryRun: boolean;
      count: number;
      forgetBatchId: string | null;
      summary: string;
      candidates?: Candidate[];
      forgotten?: Candidate[];
    };
  };
  const search = async (containerTag: string, q: string, extra: Record<string, unknown> = {}) => {
    const res = await call("POST", "/v4/search", {
      q,
      containerTag,
      searchMode: "memories",
      limit: 100,
      ...extra,
    });
    expect(res.status, res.text).toBe(200);
    return res.json.results as { id: string; memory: string; similarity: number; isForgotten?: boolean }[];
  };
  const profile = async (containerTag: string) => {
    const res = await call("POST", "/v4/profile", { containerTag });
    expect(res.status, res.text).toBe(200);
    return [...res.json.profile.static, ...res.json.profile.dynamic] as string[];
  };
  const ids = (list: { id: string }[] | undefined) => (list ?? []).map((c) => c.id);
  const titanIds = (byContent: Map<string, string>) =>
    [...TITAN, TITAN_STATIC].map((t) => byContent.get(t) as string).sort();

  it("forgets by query exactly what the dry run showed; they leave search and profiles", async () => {
    const tag = "titan-main";
    const byContent = await seed(tag);
    const request = {
      containerTag: tag,
      query: "forget everything about Project Titan",
      reason: "project cancelled",
    };

    const preview = await forget({ ...request, dryRun: true });
    expect(preview.dryRun).toBe(true);
    expect(preview.forgetBatchId).toBeNull();
    expect(preview.forgotten).toBeUndefined();
    expect(ids(preview.candidates).sort()).toEqual(titanIds(byContent));
    expect(preview.count).toBe(4);
    // Best match first, every one at or above the default threshold.
    const scores = (preview.candidates ?? []).map((c) => c.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(Math.min(...scores)).toBeGreaterThanOrEqual(0.5);
    // It is the search: /v4/search of the topic at the same threshold finds the same memories in the same order.
    expect(ids(await search(tag, "Project Titan", { threshold: 0.5 }))).toEqual(ids(preview.candidates));
    // Nothing was forgotten by the preview.
    expect((await profile(tag)).filter((m) => m.includes("Titan"))).toHaveLength(4);

    const run = await forget(request);
    expect(run.dryRun).toBe(false);
    expect(run.candidates).toBeUndefined();
    expect(ids(run.forgotten)).toEqual(ids(preview.candidates));
    expect(run.count).toBe(preview.count);
    expect(run.forgetBatchId).toMatch(/^fb_[0-9a-f]{32}$/);

    const remaining = await search(tag, "Project Titan");
    expect(ids(remaining).filter((id) => titanIds(byContent).includes(id))).toEqual([]);
    expect(ids(remaining)).toEqual(expect.arrayContaining([byContent.get(OTHER_STATIC)]));
    const facts = await profile(tag);
    expect(facts.filter((m) => m.includes("Titan"))).toEqual([]);
    expect(facts).toEqual(expect.arrayContaining([OTHER_STATIC, ...OTHER]));

    const withForgotten = await search(tag, "Project Titan", { include: { forgottenMemories: true } });
    const back = withForgotten.filter((r) => titanIds(byContent).includes(r.id));
    expect(back.map((r) => r.id).sort()).toEqual(titanIds(byContent));
    expect(back.every((r) => r.isForgotten === true)).toBe(true);
    const one = await call("GET", `/v4/memories/${byContent.get(TITAN[0] as string)}`);
    expect(one.json).toMatchObject({ isForgotten: true, forgetReason: "project cancelled" });

    // Once forgotten, nothing is left to forget.
    const again = await forget({ ...request, dryRun: true });
    expect(again.count).toBe(0);
    expect(again.candidates).toEqual([]);
  });

  it("honours threshold and maxForget, in the preview and in the run alike", async () => {
    const tag = "titan-bounds";
    await seed(tag);
    const base = { containerTag: tag, query: "Project Titan", threshold: 0 };
    const all = await forget({ ...base, dryRun: true });
    // Threshold 0 widens the net to the unrelated memories too.
    expect(all.count).toBe(7);
    const scores = (all.candidates ?? []).map((c) => c.score);
    // A threshold between two scores keeps exactly those above it.
    const cut = ((scores[2] as number) + (scores[3] as number)) / 2;
    expect(scores[2]).toBeGreaterThan(scores[3] as number);
    const high = await forget({ ...base, threshold: cut, dryRun: true });
    expect(ids(high.candidates)).toEqual(ids(all.candidates).slice(0, 3));

    const two = await forget({ ...base, maxForget: 2, dryRun: true });
    expect(ids(two.candidates)).toEqual(ids(all.candidates).slice(0, 2));
    const ran = await forget({ ...base, maxForget: 2 });
    expect(ids(ran.forgotten)).toEqual(ids(two.candidates));
    // The rest stays, in the same order.
    const rest = await forget({ ...base, dryRun: true });
    expect(ids(rest.candidates)).toEqual(ids(all.candidates).slice(2));

    const tooMany = await call("POST", "/v4/memories/forget-matching", { ...base, maxForget: 501 });
    expect(tooMany.status).toBe(400);
    const neither = await call("POST", "/v4/memories/forget-matching", { containerTag: tag });
    expect(neither.status).toBe(400);
    expect(neither.text).toContain("query or ids");
    const both = await call("POST", "/v4/memories/forget-matching", { ...base, ids: ["x"] });
    expect(both.status).toBe(400);
  });

  it("forgets exactly the ids given, ignoring unknown, foreign and already forgotten ones", async () => {
    const tag = "titan-ids";
    const byContent = await seed(tag);
    const foreign = await seed("titan-ids-other");
    const a = byContent.get(OTHER[0] as string) as string;
    const b = byContent.get(TITAN_STATIC) as string;
    const request = {
      containerTag: tag,
      ids: [b, "no-such-memory", foreign.get(OTHER[1] as string) as string, a, b],
    };
    const preview = await forget({ ...request, dryRun: true });
    expect(ids(preview.candidates)).toEqual([b, a]);
    expect(preview.candidates?.map((c) => c.score)).toEqual([1, 1]);
    const run = await forget(request);
    expect(ids(run.forgotten)).toEqual([b, a]);
    expect(await profile(tag)).not.toEqual(expect.arrayContaining([TITAN_STATIC]));
    expect(await profile(tag)).not.toContain(OTHER[0]);
    // The other container's memory is untouched.
    expect(await profile("titan-ids-other")).toContain(OTHER[1]);
    // Already forgotten: nothing to do.
    expect((await forget({ containerTag: tag, ids: [a], dryRun: true })).count).toBe(0);
  });

  it("keeps a scoped key to its own container tags", async () => {
    const mine = await seed("titan-scoped");
    const theirs = await seed("titan-foreign");
    const keyRes = await call("POST", "/v3/auth/scoped-key", { containerTag: "titan-scoped" });
    expect(keyRes.status).toBe(200);
    const key = keyRes.json.key as string;

    const refused = await call(
      "POST",
      "/v4/memories/forget-matching",
      { containerTag: "titan-foreign", query: "Project Titan" },
      key,
    );
    expect(refused.status).toBe(403);
    // Another tag's ids under its own tag are not found.
    const foreignIds = [...theirs.values()];
    const none = await forget({ containerTag: "titan-scoped", ids: foreignIds }, key);
    expect(none.count).toBe(0);
    expect(await profile("titan-foreign")).toHaveLength(7);

    const own = await forget({ containerTag: "titan-scoped", query: "Project Titan" }, key);
    expect(ids(own.forgotten).sort()).toEqual(titanIds(mine));
    expect(await profile("titan-foreign")).toHaveLength(7);
  });
});
