// The engine's side of a connector's checkpoints. What a connector gets back was stored in the database
// (the carry, possibly by an older version of the service) or travelled through the workflow's history
// (the cursor), so it is parsed with the connector's own schemas before the connector sees it: connectors
// work with typed values and need no guards of their own.

import type { z } from "zod";
import type { Logger } from "../config/logger.ts";
import type { Connector } from "./types.ts";

type CheckpointSchemas<Cursor, Carry> = Pick<
  Connector<unknown, unknown, Cursor, Carry>,
  "provider" | "cursorSchema" | "carrySchema"
>;

/** A page cursor the connector's cursorSchema refuses: retrying the same cursor cannot help. */
export class InvalidCursorError extends Error {
  override name = "InvalidCursorError";
}

/**
 * The carry of the last complete pass, typed; undefined when there is none, the connector carries
 * nothing, or the stored carry no longer fits the connector's schema (its shape changed in an
 * upgrade). Dropping it is safe: the pass then lists everything, and items whose version did not
 * change are still not fetched again.
 */
export function parseStoredCarry<Carry>(
  connector: CheckpointSchemas<unknown, Carry>,
  stored: unknown,
  log: Logger,
): Carry | undefined {
  if (stored === null || stored === undefined || !connector.carrySchema) return undefined;
  const parsed = connector.carrySchema.safeParse(stored);
  if (parsed.success) return parsed.data;
  log.warn(
    { provider: connector.provider, issues: describeIssues(parsed.error) },
    "the stored sync state does not fit this connector any more: this pass lists the source in full",
  );
  return undefined;
}

/** The cursor of the next page, typed; throws InvalidCursorError when the connector's schema refuses it. */
export function parsePageCursor<Cursor>(
  connector: CheckpointSchemas<Cursor, unknown>,
  cursor: unknown,
): Cursor {
  const parsed = connector.cursorSchema.safeParse(cursor);
  if (parsed.success) return parsed.data;
  throw new InvalidCursorError(
    `the ${connector.provider} page cursor does not fit the connector's schema (${describeIssues(parsed.error)}); ` +
      "start a new sync of the connection",
  );
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`)
    .join("; ");
}
