// Deleting a whole container tag: its documents (or only the tag, on documents shared with other
// tags), all of its memories, and the stored files nothing references any more.

import type { BlobStore } from "../blobs/index.ts";
import type { Logger } from "../config/logger.ts";
import * as store from "../store/container-tags.ts";
import type { Database } from "../store/db.ts";
import type { DocumentProcessing } from "../temporal/processing-client.ts";
import type { ConnectionSyncs } from "../temporal/sync-client.ts";
import { releaseFiles } from "./document-files.ts";

export interface ContainerTagDeps {
  db: Database;
  blobs: BlobStore;
  processing: DocumentProcessing;
  /** Stops the schedules and syncs of connections deleted with the tag. */
  syncs: Pick<ConnectionSyncs, "stop">;
  log: Logger;
}

export interface ContainerTagDeleted {
  containerTag: string;
  deletedDocuments: number;
  untaggedDocuments: number;
  deletedMemories: number;
}

/**
 * All database changes happen in one transaction; afterwards the unfinished processing runs of
 * deleted documents are stopped and unreferenced files leave the blob store. Returns undefined when
 * the tag has neither documents nor memories. API keys scoped to the tag are not touched.
 */
export async function deleteContainerTag(
  deps: ContainerTagDeps,
  tag: string,
): Promise<ContainerTagDeleted | undefined> {
  const result = await store.deleteContainerTag(deps.db, tag);
  if (
    !result.deletedDocuments.length &&
    !result.untaggedDocuments &&
    !result.deletedMemories &&
    !result.deletedConnectionIds.length &&
    !result.deletedSettings
  )
    return undefined;
  for (const connectionId of result.deletedConnectionIds)
    await deps.syncs
      .stop(connectionId)
      .catch((err) =>
        deps.log.warn({ err, connectionId }, "could not stop the sync of a deleted connection"),
      );
  await deps.processing.stopDeleted(result.deletedDocuments, "container tag deleted");
  const deletedFiles = await releaseFiles(deps, result.unreferencedFileKeys);
  deps.log.info(
    {
      containerTag: tag,
      deletedDocuments: result.deletedDocuments.length,
      untaggedDocuments: result.untaggedDocuments,
      deletedMemories: result.deletedMemories,
      deletedFiles,
    },
    "container tag deleted",
  );
  return {
    containerTag: tag,
    deletedDocuments: result.deletedDocuments.length,
    untaggedDocuments: result.untaggedDocuments,
    deletedMemories: result.deletedMemories,
  };
}
