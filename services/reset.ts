// POST /v3/settings/reset: empties the organisation (this service has one, `default`) of its content, through
// the same paths the single deletes take, so nothing is left behind: connections as DELETE /v3/connections
// removes them with their documents (sync stopped first), documents as DELETE /v3/documents does (runs in
// flight stopped, stored files released), then every memory, the settings and every container tag's settings. API keys, console users and
// webhooks are kept: they are the organisation and its members, not its content.

import { listConnections } from "../store/connections.ts";
import { deleteAllTagSettings } from "../store/container-tag-settings.ts";
import { contentCounts, deleteAllMemories, someDocumentIds } from "../store/container-tags.ts";
import { deleteDocumentsByIds } from "../store/documents.ts";
import { clearSettings } from "../store/settings.ts";
import { type ConnectionDeps, removeConnection } from "./connections.ts";
import { releaseFiles } from "./document-files.ts";

/** Documents deleted per statement: a batch's runs are stopped and its files released before the next. */
export const RESET_DOCUMENT_BATCH = 500;

export interface ResetResult {
  success: true;
  deletedConnections: number;
  deletedDocumentBatches: number;
  deletedDocumentsApprox: number;
  deletedMemoryRows: number;
  deletedExtraSpaces: number;
  clearedDefaultSpaceContext: boolean;
  clearedBrainMemoryRegistry: boolean;
  settingsReset: boolean;
}

export async function resetOrganisation(deps: ConnectionDeps): Promise<ResetResult> {
  // Counted first, so the documents removed with their connections are counted too.
  const before = await contentCounts(deps.db);
  // First, so no sync adds documents while they are being deleted.
  const connections = await listConnections(deps.db, {});
  for (const connection of connections) await removeConnection(deps, connection, true);
  // Before the documents: a document's delete would take the memories kept word for word from it uncounted.
  const deletedMemoryRows = await deleteAllMemories(deps.db);
  let batches = 0;
  for (;;) {
    const ids = await someDocumentIds(deps.db, RESET_DOCUMENT_BATCH);
    if (!ids.length) break;
    const removed = await deleteDocumentsByIds(deps.db, ids);
    batches++;
    await deps.processing.stopDeleted(removed, "organisation reset");
    await releaseFiles(
      deps,
      removed.map((d) => d.fileKey),
    );
  }
  // Memories a processing run saved between the two deletes (its run is stopped by now).
  const lateMemories = await deleteAllMemories(deps.db);
  await clearSettings(deps.db);
  // Tag settings (name, entity context, profile buckets) describe content that is gone.
  await deleteAllTagSettings(deps.db);
  deps.log.info(
    {
      connections: connections.length,
      documents: before.documents,
      memories: deletedMemoryRows + lateMemories,
      tags: before.tags,
    },
    "organisation reset",
  );
  return {
    success: true,
    deletedConnections: connections.length,
    deletedDocumentBatches: batches,
    // As counted before the reset: a document saved meanwhile is deleted too but not counted.
    deletedDocumentsApprox: before.documents,
    deletedMemoryRows: deletedMemoryRows + lateMemories,
    // Container tags are this service's spaces; none is a default one kept.
    deletedExtraSpaces: before.tags,
    // Neither exists here: no default space with a context of its own, no memory registry apart from memories.
    clearedDefaultSpaceContext: false,
    clearedBrainMemoryRegistry: false,
    settingsReset: true,
  };
}
