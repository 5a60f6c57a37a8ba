import { createInterface } from "node:readline";
import { Readable } from "node:stream";
import { type ApiClient, CliError, refusesEverything } from "./client.ts";
import { type DocumentJson, displayName, getDocument, scanDocuments, waitWithProgress } from "./documents.ts";
import { type Output, table } from "./output.ts";
import { progressBar } from "./progress.ts";

/*
 * How a failed document is reprocessed over HTTP. PATCH /v3/documents/:id reprocesses only when the
 * content changes, so it cannot retry a document as it is. Saving a document again under its customId
 * (POST /v3/documents, or /v3/documents/file for a file) reprocesses it when it had failed, and keeps
 * its tags, metadata, title and filepath. So each failed document is sent again under its customId —
 * given one first (its own id, by PATCH) when it has none — with the same source it was made from:
 * its URL, its text, or its file's bytes, which only the admin export of a container tag returns.
 */

export type SourceKind = "url" | "text" | "file";

export interface ReprocessEntry {
  id: string;
  title: string;
  kind: SourceKind;
  /** The document had no customId; it now has its own id as customId (the API needs one to save it again). */
  customIdAssigned: boolean;
  /** After sending: "queued"; with --wait: "done" or "failed"; with --dry-run: "planned". */
  status: string;
  errorReason: string | null;
}

export interface ReprocessResult {
  dryRun: boolean;
  waited: boolean;
  found: number;
  reprocessed: ReprocessEntry[];
  /** Failed documents that cannot be sent again over HTTP, and why. */
  skipped: { id: string; title: string; reason: string }[];
  /** Documents whose requests were refused or broke off. */
  errors: { id: string; title: string; error: string }[];
}

interface Planned {
  doc: DocumentJson;
  kind: SourceKind;
}

export async function reprocessFailedCommand(
  client: ApiClient,
  out: Output,
  opts: { containerTag?: string; wait: boolean; dryRun: boolean; timeoutSeconds: number },
) {
  const failed: DocumentJson[] = [];
  for await (const doc of scanDocuments(client, { containerTag: opts.containerTag, order: "asc" })) {
    if (doc.status === "failed") failed.push(doc);
  }
  const result: ReprocessResult = {
    dryRun: opts.dryRun,
    waited: opts.wait && !opts.dryRun,
    found: failed.length,
    reprocessed: [],
    skipped: [],
    errors: [],
  };
  const skip = (doc: DocumentJson, reason: string) =>
    result.skipped.push({ id: doc.id, title: displayName(doc), reason });

  const planned: Planned[] = [];
  for (const doc of failed) {
    if (doc.connectionId) {
      skip(
        doc,
        `synced by connection ${doc.connectionId}: saving it by hand would drop the link to its source; the connection's sync owns it`,
      );
    } else if (doc.url) planned.push({ doc, kind: "url" });
    else if (doc.fileSize !== null || doc.fileName !== null) {
      if (doc.containerTags.length) planned.push({ doc, kind: "file" });
      else
        skip(doc, "a file document without container tags: its file cannot be read back (export is per tag)");
    } else planned.push({ doc, kind: "text" });
  }

  const entryOf = (doc: DocumentJson, kind: SourceKind): ReprocessEntry => ({
    id: doc.id,
    title: displayName(doc),
    kind,
    customIdAssigned: !doc.customId,
    status: "planned",
    errorReason: doc.errorReason,
  });
  if (opts.dryRun) {
    result.reprocessed.push(...planned.map((p) => entryOf(p.doc, p.kind)));
  } else {
    const sending = progressBar("sending", planned.length);
    const attempt = async (doc: DocumentJson, kind: SourceKind, file?: Buffer) => {
      const entry = entryOf(doc, kind);
      try {
        const sent = await resend(client, doc, kind, file);
        if (sent === "no-content") skip(doc, "the service returned no text for it to send again");
        else result.reprocessed.push({ ...entry, status: sent.status, errorReason: null });
      } catch (error) {
        if (!(error instanceof CliError) || refusesEverything(error)) throw error;
        result.errors.push({ id: doc.id, title: entry.title, error: error.message });
      } finally {
        sending.increment(entry.title);
      }
    };
    try {
      for (const { doc, kind } of planned) if (kind !== "file") await attempt(doc, kind);
      await resendFiles(
        client,
        planned.filter((p) => p.kind === "file").map((p) => p.doc),
        (doc, file) => attempt(doc, "file", file),
        (doc, reason) => {
          skip(doc, reason);
          sending.increment(displayName(doc));
        },
      );
    } finally {
      sending.stop();
    }
  }

  if (result.waited && result.reprocessed.length) {
    const { finished } = await waitWithProgress(
      client,
      result.reprocessed.map((d) => d.id),
      opts.timeoutSeconds,
    );
    for (const e of result.reprocessed) {
      const doc = finished.get(e.id);
      if (doc) {
        e.status = doc.status;
        e.errorReason = doc.errorReason;
        // Processing may have found a title the failed run could not.
        e.title = displayName(doc);
      }
    }
  }

  out.result(result, () => renderReprocess(result));
  const failedAgain = result.reprocessed.some((e) => e.status === "failed");
  const unfinished =
    result.waited && result.reprocessed.some((e) => e.status !== "done" && e.status !== "failed");
  if (result.errors.length || failedAgain || unfinished) process.exitCode = 1;
}

async function resend(
  client: ApiClient,
  doc: DocumentJson,
  kind: SourceKind,
  file: Buffer | undefined,
): Promise<{ id: string; status: string } | "no-content"> {
  let content: string | undefined;
  if (kind === "url") content = doc.url ?? undefined;
  if (kind === "text") {
    // The list leaves content out; the document itself carries it.
    content = (await getDocument(client, doc.id))?.content ?? undefined;
    if (!content) return "no-content";
  }
  const customId = doc.customId ?? doc.id;
  if (!doc.customId) {
    await client.request("PATCH", `/v3/documents/${encodeURIComponent(doc.id)}`, { body: { customId } });
  }
  let saved: { id: string; status: string };
  if (kind === "file") {
    const form = new FormData();
    form.append("file", new Blob([new Uint8Array(file ?? [])]), doc.fileName ?? "file");
    form.append("customId", customId);
    if (doc.mimeType) form.append("mimeType", doc.mimeType);
    saved = await client.request("POST", "/v3/documents/file", { form, timeoutMs: 30 * 60_000 });
  } else {
    saved = await client.request("POST", "/v3/documents", { body: { content, customId } });
  }
  if (saved.id !== doc.id) {
    throw new CliError(
      `saving it again created another document (${saved.id}) instead of reprocessing ${doc.id}`,
    );
  }
  return saved;
}

/**
 * Sends failed file documents again with their bytes, read from the export of their first container
 * tag: the only route that returns a stored file. Each file is sent as its line of the export arrives,
 * so at most one file is held in memory.
 */
async function resendFiles(
  client: ApiClient,
  docs: DocumentJson[],
  send: (doc: DocumentJson, file: Buffer) => Promise<void>,
  skip: (doc: DocumentJson, reason: string) => void,
): Promise<void> {
  const byTag = new Map<string, Map<string, DocumentJson>>();
  for (const doc of docs) {
    const tag = doc.containerTags[0] as string;
    byTag.set(tag, (byTag.get(tag) ?? new Map()).set(doc.id, doc));
  }
  for (const [tag, wanted] of byTag) {
    let lines: AsyncIterable<string>;
    try {
      const res = await client.stream("GET", `/v3/container-tags/${encodeURIComponent(tag)}/export`, {
        timeoutMs: 30 * 60_000,
      });
      if (!res.body) throw new CliError("the export came back empty");
      lines = createInterface({ input: Readable.fromWeb(res.body as never), crlfDelay: Infinity });
    } catch (error) {
      if (!(error instanceof CliError) || (refusesEverything(error) && !isForbidden(error))) throw error;
      const why = isForbidden(error)
        ? "reading a stored file back needs an admin key (GET /v3/container-tags/:tag/export)"
        : `could not read its file back through the export of ${tag}: ${error.message}`;
      for (const doc of wanted.values()) skip(doc, why);
      continue;
    }
    let missing = `its stored file is missing (not in the export of ${tag})`;
    let sendFailure: unknown;
    try {
      for await (const line of lines) {
        if (!line.startsWith('{"kind":"document"')) continue;
        const parsed = JSON.parse(line) as { id: string; file?: string };
        const doc = wanted.get(parsed.id);
        if (!doc || parsed.file === undefined) continue;
        wanted.delete(parsed.id);
        await send(doc, Buffer.from(parsed.file, "base64")).catch((error) => {
          sendFailure = error;
          throw error;
        });
      }
    } catch (error) {
      if (error === sendFailure) throw error;
      // The service ends the stream without a clean end when the export fails midway.
      missing = `the export of ${tag} broke off before its file (${(error as Error).message})`;
    }
    for (const doc of wanted.values()) skip(doc, missing);
  }
}

const isForbidden = (error: unknown) => (error as { status?: number }).status === 403;

function renderReprocess(r: ReprocessResult): string {
  const lines: string[] = [];
  if (!r.found) return "No failed documents.";
  const verb = r.dryRun ? "Would reprocess" : "Reprocessed";
  lines.push(`${r.found} failed document(s); ${verb.toLowerCase()} ${r.reprocessed.length}.`);
  if (r.reprocessed.length) {
    lines.push(
      "",
      `${verb}:`,
      table(
        ["ID", "KIND", "STATUS", "TITLE", "REASON"],
        r.reprocessed.map((e) => [
          e.id,
          e.kind,
          e.status,
          e.title,
          e.status === "failed" || r.dryRun ? (e.errorReason ?? "") : "",
        ]),
        [24, 5, 8, 40, 100],
      ),
    );
    const assigned = r.reprocessed.filter((e) => e.customIdAssigned).length;
    if (assigned) {
      lines.push(
        "",
        `${assigned} document(s) had no customId and ${r.dryRun ? "would get" : "got"} their own id as customId (the API reprocesses a document only when it is saved again under its customId).`,
      );
    }
  }
  if (r.skipped.length) {
    lines.push(
      "",
      "Skipped:",
      table(
        ["ID", "TITLE", "REASON"],
        r.skipped.map((s) => [s.id, s.title, s.reason]),
        120,
      ),
    );
  }
  if (r.errors.length) {
    lines.push(
      "",
      "Errors:",
      table(
        ["ID", "TITLE", "ERROR"],
        r.errors.map((e) => [e.id, e.title, e.error]),
        120,
      ),
    );
  }
  return lines.join("\n");
}
