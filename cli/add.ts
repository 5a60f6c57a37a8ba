import { openAsBlob } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { type ApiClient, CliError, mapLimit, refusesEverything } from "./client.ts";
import { type DocumentJson, waitWithProgress } from "./documents.ts";
import { clip, type Output, table } from "./output.ts";
import { progressBar } from "./progress.ts";

export interface AddOptions {
  containerTag?: string;
  recursive: boolean;
  wait: boolean;
  concurrency: number;
  timeoutSeconds: number;
}

export interface AddedDocument {
  /** Path relative to the folder, with forward slashes; also sent as the document's filepath. */
  file: string;
  id: string;
  status: string;
  errorReason: string | null;
}

export interface AddResult {
  folder: string;
  containerTag: string | null;
  waited: boolean;
  counts: {
    files: number;
    uploaded: number;
    uploadErrors: number;
    done: number;
    failed: number;
    unfinished: number;
  };
  documents: AddedDocument[];
  uploadErrors: { file: string; error: string }[];
}

/** Files of a folder in a stable order; hidden entries (dot files, .git) are left out. */
export async function listFiles(folder: string, recursive: boolean): Promise<string[]> {
  const files: string[] = [];
  async function walk(dir: string, prefix: string) {
    const entries = await readdir(dir, { withFileTypes: true });
    entries.sort((a, b) => a.name.localeCompare(b.name));
    for (const entry of entries) {
      if (entry.name.startsWith(".")) continue;
      const full = path.join(dir, entry.name);
      const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
      // A symbolic link counts as what it points to.
      const info = entry.isSymbolicLink() ? await stat(full).catch(() => undefined) : entry;
      if (!info) continue;
      if (info.isDirectory()) {
        if (recursive) await walk(full, rel);
      } else if (info.isFile()) files.push(rel);
    }
  }
  await walk(folder, "");
  return files;
}

export async function addCommand(client: ApiClient, out: Output, folder: string, opts: AddOptions) {
  const root = path.resolve(folder);
  const info = await stat(root).catch(() => undefined);
  if (!info?.isDirectory()) throw new CliError(`not a folder: ${folder}`, 2);
  const files = await listFiles(root, opts.recursive);
  if (!files.length) {
    throw new CliError(
      `no files in ${folder}${opts.recursive ? "" : " (subfolders are read only with --recursive)"}`,
    );
  }

  const documents: AddedDocument[] = [];
  const uploadErrors: AddResult["uploadErrors"] = [];
  const uploading = progressBar("uploading", files.length);
  try {
    await mapLimit(files, opts.concurrency, async (file) => {
      try {
        const { id, status } = await uploadFile(client, path.join(root, file), file, opts.containerTag);
        documents.push({ file, id, status, errorReason: null });
      } catch (error) {
        if (refusesEverything(error)) throw error;
        // Refused for this file alone (too large, unsupported, ...): the others still go.
        uploadErrors.push({ file, error: (error as Error).message });
      } finally {
        uploading.increment(file);
      }
    });
  } finally {
    uploading.stop();
  }
  const byFile = (a: { file: string }, b: { file: string }) => a.file.localeCompare(b.file);
  documents.sort(byFile);
  uploadErrors.sort(byFile);

  if (opts.wait && documents.length) {
    const { finished } = await waitWithProgress(
      client,
      documents.map((d) => d.id),
      opts.timeoutSeconds,
    );
    for (const d of documents) {
      const doc: DocumentJson | undefined = finished.get(d.id);
      if (doc) {
        d.status = doc.status;
        d.errorReason = doc.errorReason;
      }
    }
  }

  const count = (status: string) => documents.filter((d) => d.status === status).length;
  const result: AddResult = {
    folder: root,
    containerTag: opts.containerTag ?? null,
    waited: opts.wait,
    counts: {
      files: files.length,
      uploaded: documents.length,
      uploadErrors: uploadErrors.length,
      done: count("done"),
      failed: count("failed"),
      unfinished: documents.length - count("done") - count("failed"),
    },
    documents,
    uploadErrors,
  };
  out.result(result, () => renderAdd(result));
  // A script must be able to tell that something did not make it.
  if (uploadErrors.length || result.counts.failed || (opts.wait && result.counts.unfinished)) {
    process.exitCode = 1;
  }
}

/** One multipart upload, the form the official SDK's documents.uploadFile sends. */
async function uploadFile(client: ApiClient, absolute: string, relative: string, containerTag?: string) {
  const form = new FormData();
  // A file-backed Blob: fetch streams it from disk instead of holding the whole file in memory.
  form.append("file", await openAsBlob(absolute), path.basename(absolute));
  if (containerTag) form.append("containerTag", containerTag);
  form.append("filepath", relative);
  return client.request<{ id: string; status: string }>("POST", "/v3/documents/file", {
    form,
    // Large media files take a while to send; the default timeout is for small JSON calls.
    timeoutMs: 30 * 60_000,
  });
}

function renderAdd(r: AddResult): string {
  const lines = [
    `Uploaded ${r.counts.uploaded} of ${r.counts.files} file(s) from ${r.folder}${
      r.containerTag ? ` to container tag ${r.containerTag}` : ""
    }.`,
  ];
  if (r.waited) {
    lines.push(
      `Processed: ${r.counts.done} done, ${r.counts.failed} failed${
        r.counts.unfinished ? `, ${r.counts.unfinished} still unfinished (timed out)` : ""
      }.`,
    );
  } else if (r.counts.uploaded) {
    lines.push(`Queued for processing (add --wait to wait for the outcome).`);
  }
  const failed = r.documents.filter((d) => d.status === "failed");
  if (failed.length) {
    lines.push(
      "",
      "Failed:",
      table(
        ["FILE", "ID", "REASON"],
        failed.map((d) => [d.file, d.id, clip(d.errorReason ?? "", 100)]),
        100,
      ),
    );
  }
  const unfinished = r.waited ? r.documents.filter((d) => d.status !== "done" && d.status !== "failed") : [];
  if (unfinished.length) {
    lines.push(
      "",
      "Unfinished:",
      table(
        ["FILE", "ID", "STATUS"],
        unfinished.map((d) => [d.file, d.id, d.status]),
      ),
    );
  }
  if (r.uploadErrors.length) {
    lines.push(
      "",
      "Not uploaded:",
      table(
        ["FILE", "ERROR"],
        r.uploadErrors.map((e) => [e.file, e.error]),
        100,
      ),
    );
  }
  return lines.join("\n");
}
