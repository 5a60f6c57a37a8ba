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
    /** Made by `embeddingModel`; indexed per model (store/search/vector-index.ts). */
    embedding: anyVector("embedding"),
    embeddingModel: text("embedding_model"),
    embeddingDimension: integer("embedding_dimension"),
    /**
     * The document's container tags while it is `done`, NULL otherwise: search filters on the chunk itself, with
     * no join to `documents` (at 50,000 documents that join cost most of a search). Kept by the triggers of
     * migration 0014 whatever writes the document or its chunks; writers that know the value set it themselves.
     */
    searchTags: text("search_tags").array(),
    tsv: tsvector("tsv").generatedAlwaysAs((): SQL => sql`to_tsvector('english', ${chunks.content})`),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [
    index("chunks_document_idx").on(t.documentId, t.position),
    index("chunks_embedding_model_idx").on(t.embeddingModel),
    index("chunks_tsv_gin").using("gin", t.tsv),
    index("chunks_search_tags_gin").using("gin", t.searchTags),
  ],
);

export type ChunkRow = typeof chunks.$inferSelect;
