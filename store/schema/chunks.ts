import { type SQL, sql } from "drizzle-orm";
import { customType, index, integer, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";
import { documents } from "./documents.ts";
import { anyVector } from "./vector.ts";

const tsvector = customType<{ data: string }>({ dataType: () => "tsvector" });

export const chunks = pgTable(
  "chunks",
  {
    id: text("id").primaryKey(),
    documentId: text("document_id")
      .notNull()
      .references(() => documents.id, { onDelete: "cascade" }),
    position: integer("position").notNull(),
    content: text("content").notNull(),
    /** Where in the file the chunk comes from: page, slide, section, start/end seconds, source. */
    metadata: jsonb("metadata").$type<Record<string, string | number>>().notNull().default({}),
    /** Made by `embeddingModel`; indexed per model (store/vector-index.ts). */
    embedding: anyVector("embedding"),
    embeddingModel: text("embedding_model"),
    embeddingDimension: integer("embedding_dimension"),
    tsv: tsvector("tsv").generatedAlwaysAs((): SQL => sql`to_tsvector('english', ${chunks.content})`),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [
    index("chunks_document_idx").on(t.documentId, t.position),
    index("chunks_embedding_model_idx").on(t.embeddingModel),
    index("chunks_tsv_gin").using("gin", t.tsv),
  ],
);

export type ChunkRow = typeof chunks.$inferSelect;
