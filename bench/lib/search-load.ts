// Bulk load of the search benchmark's store: the rows the worker would leave behind (documents `done`,
// chunks with their text, vector, model and dimension; `tsv` is a generated column), written with
// multi-row INSERTs in transactions of a few thousand chunks. The worker's own per-document path
// (saveDocument → … → saveEmbeddings, one UPDATE per chunk) loads ~50 chunks/s on a busy 2-core
// machine, which would take over half an hour at 100,000 chunks.

import { createHash } from "node:crypto";
import { sql } from "drizzle-orm";
import { type Database, queryRows } from "../../store/db.ts";
import { newId } from "../../store/ids.ts";
import { chunks, documents } from "../../store/schema/index.ts";
import { progress } from "./progress.ts";
import type { SearchDocument } from "./search-corpus.ts";

const ROWS_PER_INSERT = 250;
const CHUNKS_PER_TRANSACTION = 5_000;

/**
 * Drops the secondary indexes of `chunks` (GIN on tsv, btrees) and returns a function that recreates
 * them from their own definitions: building an index once over loaded rows is much faster than
 * updating it row by row.
 */
export async function deferChunkIndexes(db: Database): Promise<() => Promise<string[]>> {
  const rows = await queryRows<{ name: string; def: string }>(
    db,
    sql`SELECT i.indexname AS name, i.indexdef AS def FROM pg_indexes i
        JOIN pg_index x ON x.indexrelid = to_regclass(i.schemaname || '.' || i.indexname)
        WHERE i.schemaname = current_schema() AND i.tablename = 'chunks' AND NOT x.indisprimary AND NOT x.indisunique`,
  );
  for (const r of rows) await db.execute(sql.raw(`DROP INDEX ${r.name}`));
  return async () => {
    for (const r of rows) await db.execute(sql.raw(r.def));
    return rows.map((r) => r.name);
  };
}

export async function bulkLoad(
  db: Database,
  opts: {
    /** An array, or a generator for stores too big to hold as one (then `chunks` names their number). */
    docs: Iterable<SearchDocument>;
    chunks?: number;
    tag: string;
    model: { name: string; dimension: number };
    vectorOf: (text: string, doc: SearchDocument, position: number) => ArrayLike<number>;
    label: string;
  },
): Promise<void> {
  const { tag, model } = opts;
  const total =
    opts.chunks ?? (Array.isArray(opts.docs) ? opts.docs.reduce((s, d) => s + d.pieces.length, 0) : 0);
  const bar = progress(opts.label, total, 15_000);
  const source = opts.docs[Symbol.iterator]();
  let ahead = source.next();
  let loaded = 0;
  while (!ahead.done) {
    // One transaction: whole documents up to ~CHUNKS_PER_TRANSACTION chunks.
    const group: SearchDocument[] = [];
    let size = 0;
    while (!ahead.done && (size === 0 || size + ahead.value.pieces.length <= CHUNKS_PER_TRANSACTION)) {
      const d = ahead.value;
      group.push(d);
      size += d.pieces.length;
      ahead = source.next();
    }
    const now = new Date();
    const docRows = group.map((d) => {
      const content = d.pieces.join(" ");
      return {
        id: newId(),
        title: d.title || null,
        type: "text",
        status: "done" as const,
        source: content,
        content,
        containerTags: [tag],
        metadata: { scifactId: d.abstractId },
        contentHash: createHash("sha256").update(content).digest("hex"),
        embeddingModel: model.name,
        processingRun: 1,
        statusHistory: [{ status: "done" as const, at: now.toISOString(), run: 1 }],
      };
    });
    const chunkRows = group.flatMap((d, k) =>
      d.pieces.map((content, position) => ({
        id: newId(),
        documentId: (docRows[k] as { id: string }).id,
        position,
        content,
        embedding: Array.from(opts.vectorOf(content, d, position)),
        embeddingModel: model.name,
        embeddingDimension: model.dimension,
      })),
    );
    await db.transaction(async (tx) => {
      for (let j = 0; j < docRows.length; j += ROWS_PER_INSERT)
        await tx.insert(documents).values(docRows.slice(j, j + ROWS_PER_INSERT));
      for (let j = 0; j < chunkRows.length; j += ROWS_PER_INSERT)
        await tx.insert(chunks).values(chunkRows.slice(j, j + ROWS_PER_INSERT));
    });
    loaded += size;
    bar.update(loaded);
  }
  bar.finish();
}
