// Time-limited links that download a document's original file without an API key
// (GET /v3/documents/{id}/file-url). On S3 the link is the store's own presigned GET. On disk it points back
// at this API (GET /v3/documents/{id}/file), signed with a key derived from MEMORY_ENCRYPTION_KEY over the
// document id, the stored file's key and the expiry: the link stops working when it expires, when the
// document is deleted, and when its file is replaced (the key differs), and every API process sharing
// MEMORY_ENCRYPTION_KEY accepts the links of the others.

import { createHmac, timingSafeEqual } from "node:crypto";
import { attachment } from "../blobs/s3.ts";
import { BlobNotFoundError, type BlobStore } from "../blobs/types.ts";
import type { Config } from "../config/env.ts";
import type { Database } from "../store/db.ts";
import { findDocument } from "../store/documents.ts";
import type { SecretBox } from "../store/secrets.ts";

/** How long a link lives by default and at most: 24 hours, as the OpenAPI document of the SDK says. */
export const FILE_URL_MAX_SECONDS = 86_400;

export interface FileUrlDeps {
  db: Database;
  blobs: BlobStore;
  secrets: SecretBox;
  config: Pick<Config, "PUBLIC_URL" | "HOST" | "PORT">;
}

/** The part of a document a link is made for. */
export interface FileOfDocument {
  id: string;
  fileKey: string | null;
  fileName: string | null;
  mimeType: string | null;
}

export class NoStoredFileError extends Error {
  constructor() {
    super("this document has no stored file (it was added as text)");
  }
}

/** Why a download link was refused: `expired` or `invalid` (403), `gone` (404: the document was deleted). */
export class FileLinkRefusedError extends Error {
  constructor(
    readonly reason: "expired" | "invalid" | "gone",
    message: string,
  ) {
    super(message);
  }
}

const signer = (secrets: SecretBox) => secrets.derive("document-file-links");

function sign(key: Buffer, documentId: string, fileKey: string, expires: number): string {
  return createHmac("sha256", key).update(`${documentId}\n${fileKey}\n${expires}`).digest("base64url");
}

export async function fileUrl(
  deps: FileUrlDeps,
  doc: FileOfDocument,
  expiresInSeconds: number = FILE_URL_MAX_SECONDS,
): Promise<{ url: string; expiresAt: Date }> {
  if (!doc.fileKey) throw new NoStoredFileError();
  const seconds = Math.min(Math.max(1, Math.floor(expiresInSeconds)), FILE_URL_MAX_SECONDS);
  const now = Date.now();
  if (deps.blobs.presignGet) {
    const url = await deps.blobs.presignGet(doc.fileKey, {
      expiresInSeconds: seconds,
      fileName: doc.fileName ?? undefined,
      contentType: doc.mimeType ?? undefined,
    });
    return { url, expiresAt: new Date(now + seconds * 1000) };
  }
  const expires = Math.floor(now / 1000) + seconds;
  const signature = sign(signer(deps.secrets), doc.id, doc.fileKey, expires);
  const base = (deps.config.PUBLIC_URL ?? `http://${deps.config.HOST}:${deps.config.PORT}`).replace(
    /\/+$/,
    "",
  );
  const url = `${base}/v3/documents/${encodeURIComponent(doc.id)}/file?expires=${expires}&signature=${signature}`;
  return { url, expiresAt: new Date(expires * 1000) };
}

/** The bytes a disk link points at, once its expiry, document and signature are checked. */
export async function openFileLink(
  deps: FileUrlDeps,
  documentId: string,
  link: { expires: number; signature: string },
): Promise<{ bytes: Buffer; contentType: string; disposition: string }> {
  if (link.expires * 1000 <= Date.now()) throw new FileLinkRefusedError("expired", "this link has expired");
  // A link names the document by id, never by customId (which a later document may take).
  const row = await findDocument(deps.db, documentId);
  if (!row || row.id !== documentId || !row.fileKey) {
    throw new FileLinkRefusedError("gone", "the document of this link was deleted");
  }
  const expected = Buffer.from(sign(signer(deps.secrets), row.id, row.fileKey, link.expires));
  const given = Buffer.from(link.signature);
  // Also refuses the links made for a file the document no longer has (its key went into the signature).
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new FileLinkRefusedError("invalid", "this link's signature is not valid");
  }
  let bytes: Buffer;
  try {
    // Bounded by the upload limit, so read whole: the blob store reads whole files everywhere.
    bytes = await deps.blobs.get(row.fileKey);
  } catch (error) {
    // Deleted between the look-up and the read.
    if (error instanceof BlobNotFoundError)
      throw new FileLinkRefusedError("gone", "the file of this link is gone");
    throw error;
  }
  return {
    bytes,
    contentType: row.mimeType ?? "application/octet-stream",
    disposition: attachment(row.fileName ?? row.id),
  };
}
