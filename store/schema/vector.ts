import { customType } from "drizzle-orm/pg-core";

/**
 * A pgvector column without a fixed dimension, so one table can hold vectors of the model in use
 * and, during a migration, of the model being replaced. Each row records its model; searches and
 * HNSW indexes are per model (a partial index over `embedding::vector(N)`), so vectors of two
 * models are never compared. See store/search/vector-index.ts.
 */
export const anyVector = customType<{ data: number[]; driverData: string }>({
  dataType: () => "vector",
  toDriver: (value) => `[${value.join(",")}]`,
  fromDriver: (value) => JSON.parse(value) as number[],
});
