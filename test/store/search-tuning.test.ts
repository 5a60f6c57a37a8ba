import { type SQL, sql } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { afterEach, describe, expect, it } from "vitest";
import { keywordRankSql, searchTuning, setSearchTuning, TUNED_SEARCH } from "../../store/search/tuning.ts";

describe("search tuning", () => {
  afterEach(() => setSearchTuning());

  it("runs with the tuned defaults until an evaluation changes them, and is restored without arguments", () => {
    expect(searchTuning()).toEqual(TUNED_SEARCH);
    setSearchTuning({ fusion: "rrf", blendVectorWeight: 0.7 });
    expect(searchTuning()).toEqual({ ...TUNED_SEARCH, fusion: "rrf", blendVectorWeight: 0.7 });
    setSearchTuning({ maxTermFrequency: 0.05 });
    expect(searchTuning()).toEqual({ ...TUNED_SEARCH, maxTermFrequency: 0.05 });
    setSearchTuning();
    expect(searchTuning()).toBe(TUNED_SEARCH);
  });

  it("refuses values outside their range", () => {
    expect(() => setSearchTuning({ blendVectorWeight: 1.5 })).toThrow(/within 0..1/);
    expect(() => setSearchTuning({ maxTermFrequency: 0 })).toThrow(/above 0/);
    expect(searchTuning()).toEqual(TUNED_SEARCH);
  });

  it("names the keyword ranking function and its normalisation", () => {
    const text = (q: SQL) => new PgDialect().sqlToQuery(q);
    expect(text(keywordRankSql("ts_rank_cd/0", "m", sql.raw("q"))).sql).toBe("ts_rank_cd(m.tsv, q, 0)");
    const passed = text(keywordRankSql("ts_rank/1", "c", sql`${"'cell'"}::tsquery`));
    expect(passed.sql).toBe("ts_rank(c.tsv, $1::tsquery, 1)");
    expect(passed.params).toEqual(["'cell'"]);
  });
});
