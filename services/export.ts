// Export and import of one container tag as JSON Lines: a header line, one line per document (with
// its original file as base64 unless left out), one line per memory version. An import recreates
// documents with their ids and reprocesses them here (chunks and vectors of this instance's model);
// memories keep ids, versions and forget state and are embedded again with this instance's embedder.

import { z } from "zod";
import { BlobNotFoundError, type BlobStore } from "../blobs/index.ts";
import type { Logger } from "../config/logger.ts";
import type { Embedder } from "../pipeline/embedder/types.ts";
import { fairnessKeyOf } from "../store/admission.ts";
import * as store from "../store/container-tags.ts";
import type { Database } from "../store/db.ts";
import type { MemoryRelation, NewDocumentRow, NewMemoryRow } from "../store/schema/index.ts";
import { type DocumentStatus, documentStatuses } from "../store/vocabulary.ts";
import type { DocumentProcessing } from "../temporal/processing-client.ts";
import { type ImportedDocument, saveImportedDocuments } from "./documents.ts";

export const EXPORT_FORMAT = "memory-service-export";
export const EXPORT_VERSION = 1;

export interface ExportDeps {
  db: Database;
  blobs: BlobStore;
  log: Logger;
}

export interface ImportDeps extends ExportDeps {
  processing: DocumentProcessing;
  embedder: Embedder;
}

/** Documents are read this many at a time (their files one by one); memories in larger pages. */
const DOCUMENT_PAGE = 20;
const MEMORY_PAGE = 500;
/** Memories embedded and written per transaction on import. */
const MEMORY_BATCH = 64;

/**
 * The export of a tag as a stream of JSON lines, read page by page as the client consumes it (a
 * large tag never sits in memory at once). Counts in the header are taken when the export starts.
 * Returns undefined when the tag has neither documents nor memories.
 */
export async function exportContainerTag(
  deps: ExportDeps,
  tag: string,
  opts: { files: boolean; pageSize?: { documents: number; memories: number } },
): Promise<ReadableStream<Uint8Array> | undefined> {
  const pageSize = opts.pageSize ?? { documents: DOCUMENT_PAGE, memories: MEMORY_PAGE };
  const counts = await store.countTag(deps.db, tag);
  if (!counts.documents && !counts.memories) return undefined;
  const encoder = new TextEncoder();
  const line = (value: unknown) => encoder.encode(`${JSON.stringify(value)}\n`);
  let headerSent = false;
  let docs: store.ExportedDocumentRow[] = [];
  let docCursor: string | null = null;
  let docsDone = false;
  let memCursor: store.MemoryCursor | null = null;
  let memsDone = false;

  async function nextChunk(): Promise<Uint8Array | null> {
    if (!headerSent) {
      headerSent = true;
      return line({
        kind: "header",
        format: EXPORT_FORMAT,
        version: EXPORT_VERSION,
        containerTag: tag,
        exportedAt: new Date().toISOString(),
        counts,
      });
    }
    if (!docsDone) {
      if (!docs.length) {
        docs = await store.documentsPage(deps.db, tag, docCursor, pageSize.documents);
        if (!docs.length) docsDone = true;
      }
      const doc = docs.shift();
      if (doc) {
        docCursor = doc.id;
        return line(await documentLine(deps, doc, opts.files));
      }
    }
    if (!memsDone) {
      const page = await store.memoriesPage(deps.db, tag, memCursor, pageSize.memories);
      const last = page.at(-1);
      if (!last) {
        memsDone = true;
        return null;
      }
      memCursor = { root: last.chain, version: last.version, id: last.id };
      const text = page.map(({ chain: _chain, ...m }) => JSON.stringify({ kind: "memory", ...m })).join("\n");
      return encoder.encode(`${text}\n`);
    }
    return null;
  }

  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const chunk = await nextChunk();
          if (chunk) controller.enqueue(chunk);
          else controller.close();
        } catch (err) {
          // The 200 is already sent: the client sees the stream break off instead of a clean end.
          deps.log.error({ err, containerTag: tag }, "export failed while streaming");
          controller.error(err);
        }
      },
    },
    { highWaterMark: 0 },
  );
}

async function documentLine(deps: ExportDeps, doc: store.ExportedDocumentRow, files: boolean) {
  let file: string | undefined;
  if (files && doc.fileKey) {
    try {
      file = (await deps.blobs.get(doc.fileKey)).toString("base64");
    } catch (err) {
      if (!(err instanceof BlobNotFoundError)) throw err;
      deps.log.warn({ documentId: doc.id, key: doc.fileKey }, "stored file missing; exported without it");
    }
  }
  return { kind: "document", ...doc, ...(file !== undefined ? { file } : {}) };
}

// ---------------------------------------------------------------------------------------------
// Import

const Id = z.string().min(1).max(255);
const IsoDate = z.iso.datetime({ offset: true });
const text = z
  .string()
  .nullish()
  .transform((v) => v ?? null);
const MetadataValue = z.union([z.string(), z.number(), z.boolean(), z.array(z.string())]);
const FileMetadata = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]));
const memoryRelations = ["updates", "extends", "derives"] as const satisfies readonly MemoryRelation[];

const HeaderLine = z.object({
  kind: z.literal("header"),
  format: z.literal(EXPORT_FORMAT),
  version: z.literal(EXPORT_VERSION),
  containerTag: z.string(),
  exportedAt: IsoDate,
  counts: z.object({ documents: z.number().int().min(0), memories: z.number().int().min(0) }).optional(),
});

const DocumentLine = z.object({
  kind: z.literal("document"),
  id: Id,
  customId: Id.nullish().transform((v) => v ?? null),
  title: text,
  type: z.string().min(1).max(50),
  source: z.string(),
  url: text,
  filepath: text,
  entityContext: text,
  endUserId: text,
  metadata: z.record(z.string(), MetadataValue),
  fileMetadata: FileMetadata.nullish().transform((v) => v ?? null),
  /** Key of the stored file (services/document-files.ts); only this form is accepted (never an arbitrary path). */
  fileKey: z
    .string()
    .regex(/^files\/[0-9a-f]{2}\/[0-9a-f]{64}(\.[0-9a-f]{16})?$/, "not a stored file key")
    .nullish()
    .transform((v) => v ?? null),
  fileName: text,
  mimeType: text,
  fileSize: z.number().int().min(0).nullish(),
  summary: text,
  content: text,
  containerTags: z.array(z.string()).optional(),
  connectionId: text,
  /** What memory extraction made of the document; its memories travel as memory lines. */
  memoryExtraction: z
    .object({
      run: z.number().int(),
      status: z.enum(["done", "skipped", "failed"]),
      memories: z.number().int().min(0),
      reason: z.string().optional(),
      at: z.string(),
    })
    .nullish()
    .transform((v) => v ?? null),
  status: z.enum(documentStatuses),
  errorReason: text,
  processingRun: z.number().int().min(0).max(1_000_000_000).optional(),
  createdAt: IsoDate,
  updatedAt: IsoDate,
  /** The original file, base64; absent when exported with files=false or when the file was missing. */
  file: z.base64().optional(),
});

const MemoryLine = z.object({
  kind: z.literal("memory"),
  id: Id,
  containerTag: z.string().optional(),
  content: z.string().min(1),
  isStatic: z.boolean(),
  metadata: z.record(z.string(), MetadataValue),
  endUserId: text,
  forgetAfter: IsoDate.nullish(),
  forgetReason: text,
  isForgotten: z.boolean(),
  forgottenAt: IsoDate.nullish(),
  version: z.number().int().min(1),
  parentId: Id.nullish(),
  rootId: Id.nullish(),
  isLatest: z.boolean(),
  relation: z.enum(memoryRelations).nullish(),
  relatedTo: Id.nullish(),
  sourceDocumentId: Id.nullish(),
  createdAt: IsoDate,
  updatedAt: IsoDate,
});

const BodyLine = z.discriminatedUnion("kind", [DocumentLine, MemoryLine]);

type DocumentLine = z.infer<typeof DocumentLine>;
type MemoryLine = z.infer<typeof MemoryLine>;

export interface ParsedImport {
  header: z.infer<typeof HeaderLine>;
  documents: { line: number; doc: Omit<DocumentLine, "file">; file?: Buffer }[];
  memories: { line: number; memory: MemoryLine }[];
}

/** A line of an import that is not valid: nothing has been written. */
export class ImportLineError extends Error {
  constructor(
    readonly line: number,
    detail: string,
  ) {
    super(`line ${line}: ${detail}`);
  }
}

/** An import that would take a customId another document holds: nothing has been written. */
export class ImportConflictError extends Error {}

/** Reads and validates every line before anything is written; the first bad line fails the whole import. */
export async function parseImport(body: ReadableStream<Uint8Array> | null): Promise<ParsedImport> {
  let header: ParsedImport["header"] | undefined;
  const documents: ParsedImport["documents"] = [];
  const memories: ParsedImport["memories"] = [];
  let lineNo = 0;
  for await (const raw of body ? readLines(body) : []) {
    lineNo++;
    const trimmed = raw.trim();
    if (!trimmed) continue;
    let value: unknown;
    try {
      value = JSON.parse(trimmed);
    } catch {
      throw new ImportLineError(lineNo, "not valid JSON");
    }
    if (!header) {
      const parsed = HeaderLine.safeParse(value);
      if (!parsed.success)
        throw new ImportLineError(lineNo, `expected the export header: ${issue(parsed.error)}`);
      header = parsed.data;
      continue;
    }
    const parsed = BodyLine.safeParse(value);
    if (!parsed.success) throw new ImportLineError(lineNo, issue(parsed.error));
    if (parsed.data.kind === "document") {
      const { file, ...doc } = parsed.data;
      documents.push({
        line: lineNo,
        doc,
        ...(file !== undefined ? { file: Buffer.from(file, "base64") } : {}),
      });
    } else {
      memories.push({ line: lineNo, memory: parsed.data });
    }
  }
  if (!header)
    throw new ImportLineError(Math.max(lineNo, 1), "the body is empty: expected the export header");
  return { header, documents, memories };
}

function issue(error: z.ZodError): string {
  const first = error.issues[0];
  if (!first) return "invalid";
  return first.path.length ? `${first.path.join(".")}: ${first.message}` : first.message;
}

/** Splits a byte stream into lines, scanning each byte once (a long line, e.g. a large file, stays linear). */
async function* readLines(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let pending: string[] = [];
  const reader = body.getReader();
  let lineNo = 1;
  const decode = (bytes?: Uint8Array) => {
    try {
      return bytes ? decoder.decode(bytes, { stream: true }) : decoder.decode();
    } catch {
      throw new ImportLineError(lineNo, "not valid UTF-8");
    }
  };
  for (;;) {
    const { done, value } = await reader.read();
    const chunk = done ? decode() : decode(value);
    let start = 0;
    for (let nl = chunk.indexOf("\n"); nl >= 0; nl = chunk.indexOf("\n", start)) {
      pending.push(chunk.slice(start, nl));
      yield pending.join("");
      lineNo++;
      pending = [];
      start = nl + 1;
    }
    if (start < chunk.length) pending.push(chunk.slice(start));
    if (done) break;
  }
  if (pending.length) yield pending.join("");
}

export interface ImportResult {
  containerTag: string;
  documents: { imported: number; skipped: number };
  memories: { imported: number; skipped: number };
}

/**
 * Writes a validated import into `tag`. Documents: ids kept, an existing id is skipped, files go
 * back into the blob store, each new document is queued and processed normally (only `tag` is
 * given to it). Memories: ids, versions, links, forget state and timestamps kept; embedded here in
 * batches; an existing id is skipped. Documents are written in one transaction, memories in batches,
 * so an import that fails midway (e.g. the embedder) can simply be sent again.
 */
export async function importContainerTag(
  deps: ImportDeps,
  tag: string,
  parsed: ParsedImport,
): Promise<ImportResult> {
  const { db } = deps;
  const existingDocs = await store.existingIds(
    db,
    "documents",
    parsed.documents.map((d) => d.doc.id),
  );
  const seen = new Set<string>();
  const newDocs = parsed.documents.filter(({ doc }) => {
    if (existingDocs.has(doc.id) || seen.has(doc.id)) return false;
    seen.add(doc.id);
    return true;
  });
  await refuseTakenCustomIds(db, newDocs);

  const now = new Date();
  const imported: ImportedDocument[] = [];
  for (const { doc, file } of newDocs) {
    const run = await freshRun(deps, doc.id, (doc.processingRun ?? 0) + 1);
    const status: DocumentStatus = "queued";
    const row: NewDocumentRow = {
      id: doc.id,
      customId: doc.customId,
      title: doc.title,
      type: doc.type,
      status,
      source: doc.source,
      url: doc.url,
      filepath: doc.filepath,
      entityContext: doc.entityContext,
      endUserId: doc.endUserId,
      // Without the bytes, the key exported (the file may still be in this store); with them, where they go.
      fileKey: doc.fileKey,
      fileSize: doc.fileSize ?? null,
      fileName: doc.fileName,
      mimeType: doc.mimeType,
      content: doc.content,
      fileMetadata: doc.fileMetadata,
      summary: doc.summary,
      containerTags: [tag],
      metadata: doc.metadata,
      connectionId: doc.connectionId,
      // Memories extracted from the document come with the import: recorded as done for the new run,
      // so processing does not extract them a second time.
      memoryExtraction: doc.memoryExtraction ? { ...doc.memoryExtraction, run } : null,
      processingRun: run,
      workflowRun: 0,
      fairnessKey: fairnessKeyOf({ connectionId: doc.connectionId, containerTags: [tag] }),
      statusHistory: [{ status, at: now.toISOString(), run }],
      createdAt: new Date(doc.createdAt),
      updatedAt: new Date(doc.updatedAt),
    };
    imported.push({
      row,
      ...(file ? { file: { bytes: file, contentType: doc.mimeType } } : {}),
    });
  }
  const insertedDocs = await saveImportedDocuments(deps, imported);

  const existingMems = await store.existingIds(
    db,
    "memories",
    parsed.memories.map((m) => m.memory.id),
  );
  const seenMems = new Set<string>();
  const newMems = parsed.memories.filter(({ memory }) => {
    if (existingMems.has(memory.id) || seenMems.has(memory.id)) return false;
    seenMems.add(memory.id);
    return true;
  });
  let importedMemories = 0;
  for (let i = 0; i < newMems.length; i += MEMORY_BATCH) {
    const batch = newMems.slice(i, i + MEMORY_BATCH).map((m) => m.memory);
    const vectors = await deps.embedder.embed(
      batch.map((m) => m.content),
      "document",
    );
    importedMemories += await store.insertImportedMemories(
      db,
      batch.map((m, j) => memoryRow(m, tag, vectors[j] as number[], deps.embedder.model)),
    );
  }
  deps.log.info(
    { containerTag: tag, documents: insertedDocs.length, memories: importedMemories },
    "container tag imported",
  );
  return {
    containerTag: tag,
    documents: { imported: insertedDocs.length, skipped: parsed.documents.length - insertedDocs.length },
    memories: { imported: importedMemories, skipped: parsed.memories.length - importedMemories },
  };
}

function memoryRow(m: MemoryLine, tag: string, embedding: number[], model: string): NewMemoryRow {
  const date = (v: string | null | undefined) => (v ? new Date(v) : null);
  return {
    id: m.id,
    containerTag: tag,
    content: m.content,
    isStatic: m.isStatic,
    metadata: m.metadata,
    endUserId: m.endUserId,
    forgetAfter: date(m.forgetAfter),
    forgetReason: m.forgetReason,
    isForgotten: m.isForgotten,
    forgottenAt: date(m.forgottenAt),
    version: m.version,
    parentId: m.parentId ?? null,
    rootId: m.rootId ?? null,
    isLatest: m.isLatest,
    relation: m.relation ?? null,
    relatedTo: m.relatedTo ?? null,
    sourceDocumentId: m.sourceDocumentId ?? null,
    embedding,
    embeddingModel: model,
    createdAt: new Date(m.createdAt),
    updatedAt: new Date(m.updatedAt),
  };
}

/** customIds are unique in the namespace an import writes into: one held by another document there (or twice in the file) refuses the import. */
async function refuseTakenCustomIds(db: Database, docs: ParsedImport["documents"]) {
  const withCustomId = docs.filter((d) => d.doc.customId !== null);
  const holders = await store.customIdHolders(
    db,
    withCustomId.map((d) => d.doc.customId as string),
  );
  const inFile = new Map<string, string>();
  for (const { line, doc } of withCustomId) {
    const customId = doc.customId as string;
    const holder = holders.get(customId) ?? inFile.get(customId);
    if (holder && holder !== doc.id) {
      throw new ImportConflictError(
        `line ${line}: customId '${customId}' is already used by another document`,
      );
    }
    inFile.set(customId, doc.id);
  }
}

/**
 * Processing workflows are identified by document id and run. A document imported back into a
 * service (or into one sharing the Temporal namespace) may have finished workflows under its old
 * runs, which Temporal would not start again: the first run without a workflow is used.
 */
async function freshRun(deps: ImportDeps, documentId: string, from: number): Promise<number> {
  let run = from;
  try {
    for (let tries = 0; tries < 100 && (await deps.processing.exists({ documentId, run })); tries++) run++;
  } catch (err) {
    deps.log.warn(
      { err, documentId },
      "could not ask Temporal about earlier runs; using the next run number",
    );
  }
  return run;
}
