import type { caller } from "./http.ts";
import { waitFor } from "./service.ts";

/** A connection's sync run as GET /v3/connections/:id shows it. */
export interface SyncRun {
  id: string;
  status: string;
  trigger: string;
  errorCode: string | null;
  error?: string | null;
  counts: Record<string, number>;
}

/** Reads a connection and waits for its sync runs, over HTTP as a client would. */
export function connectionProbe(call: ReturnType<typeof caller>, current: () => string) {
  // biome-ignore lint/suspicious/noExplicitAny: the connection is inspected loosely, as test responses are
  const connection = async (id = current()): Promise<any> =>
    (await call("GET", `/v3/connections/${id}`)).json;
  const lastSync = async (id = current()): Promise<SyncRun | null> => (await connection(id)).lastSync;
  /** The first finished run after `previous` (a run id, or undefined for the first one). */
  const syncAfter = (previous: string | undefined, id = current()) =>
    waitFor(async () => {
      const run = await lastSync(id);
      return run && run.id !== previous && run.status !== "running" ? run : undefined;
    }, "a sync run to finish");
  return { connection, lastSync, syncAfter };
}
