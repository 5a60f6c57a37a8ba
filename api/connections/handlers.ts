import type { RouteHandler } from "@hono/zod-openapi";
import { findConnector } from "../../connectors/registry.ts";
import {
  type ConnectionDeps,
  ConnectionSetupError,
  configureConnection,
  contextForConnection,
  createConnectionFor,
  presentConnection,
  presentConnections,
  presentSyncRun,
  removeConnection,
  renewPickerLink,
} from "../../services/connections.ts";
import {
  connectionsDocuments,
  findConnection,
  latestSyncRuns,
  listConnections,
  recentSyncRuns,
} from "../../store/connections.ts";
import type { ApiDeps, AppEnv } from "../deps.ts";
import { ApiError, badRequest, notFound } from "../errors.ts";
import { connectionDeps } from "./deps.ts";
import type * as routes from "./routes.ts";

/** Container tag of a connection created without any (Supermemory's default project tag). */
export const DEFAULT_CONNECTION_TAG = "sm_project_default";

export function connectionHandlers(deps: ApiDeps) {
  const { db } = deps;
  const service = (): ConnectionDeps => connectionDeps(deps);
  const setupErrors = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      if (error instanceof ConnectionSetupError) throw badRequest(error.message, error.field);
      throw error;
    }
  };
  const knownProvider = (provider: string) => {
    if (!findConnector(provider)) throw badRequest(`unknown provider '${provider}'`, "provider");
  };
  const one = async (connectionId: string) => {
    const row = await findConnection(db, connectionId);
    if (!row) throw notFound("connection");
    return row;
  };

  const list: RouteHandler<typeof routes.list, AppEnv> = async (c) => {
    const body = c.req.valid("json") ?? {};
    const rows = await listConnections(db, { containerTags: body.containerTags });
    return c.json(await presentConnections(db, rows), 200);
  };

  const create: RouteHandler<typeof routes.create, AppEnv> = async (c) => {
    const { provider } = c.req.valid("param");
    knownProvider(provider);
    const body = c.req.valid("json");
    const containerTags = [
      ...new Set([...(body.containerTag ? [body.containerTag] : []), ...(body.containerTags ?? [])]),
    ];
    // The SDK lets a client leave both out; the documents then go where Supermemory puts them.
    if (!containerTags.length) containerTags.push(DEFAULT_CONNECTION_TAG);
    const created = await setupErrors(() =>
      createConnectionFor(service(), provider, {
        containerTags,
        metadata: body.metadata ?? {},
        documentLimit: body.documentLimit,
        redirectUrl: body.redirectUrl,
        syncIntervalMinutes: body.syncIntervalMinutes,
      }),
    );
    return c.json(
      {
        id: created.connection.id,
        authLink: created.authLink,
        expiresIn: created.expiresIn,
        ...(body.redirectUrl ? { redirectsTo: body.redirectUrl } : {}),
      },
      200,
    );
  };

  const getById: RouteHandler<typeof routes.getById, AppEnv> = async (c) => {
    const row = await one(c.req.valid("param").connectionId);
    const runs = await latestSyncRuns(db, [row.id]);
    return c.json(presentConnection(row, runs.get(row.id)), 200);
  };

  const runs: RouteHandler<typeof routes.runs, AppEnv> = async (c) => {
    const row = await one(c.req.valid("param").connectionId);
    const found = await recentSyncRuns(db, row.id, c.req.valid("query").limit);
    return c.json({ runs: found.map(presentSyncRun) }, 200);
  };

  const syncOne: RouteHandler<typeof routes.syncOne, AppEnv> = async (c) => {
    const row = await one(c.req.valid("param").connectionId);
    if (row.status !== "active") {
      throw new ApiError(
        409,
        "conflict",
        row.status === "auth_expired"
          ? "the connection's credentials were refused: reconnect it before syncing"
          : `the connection is ${row.status}: finish its setup before syncing`,
      );
    }
    await deps.syncs.startNow(row.id, "import");
    return c.json({ id: row.id, message: `Sync of ${row.provider} connection ${row.id} started` }, 200);
  };

  const getByTag: RouteHandler<typeof routes.getByTag, AppEnv> = async (c) => {
    const { provider } = c.req.valid("param");
    knownProvider(provider);
    const [row] = await listConnections(db, { provider, containerTags: c.req.valid("json").containerTags });
    if (!row) throw notFound("connection");
    const runs = await latestSyncRuns(db, [row.id]);
    return c.json(presentConnection(row, runs.get(row.id)), 200);
  };

  const importNow: RouteHandler<typeof routes.importNow, AppEnv> = async (c) => {
    const { provider } = c.req.valid("param");
    knownProvider(provider);
    const body = c.req.valid("json") ?? {};
    const rows = await listConnections(db, { provider, containerTags: body.containerTags });
    let started = 0;
    for (const row of rows) {
      // A connection whose credentials were refused waits to be reconnected.
      if (row.status !== "active") continue;
      await deps.syncs.startNow(row.id, "import");
      started++;
    }
    // A sync already running takes one more pass after its current one.
    return c.text(`Sync started for ${started} ${provider} connection(s)`, 202);
  };

  const listDocuments: RouteHandler<typeof routes.listDocuments, AppEnv> = async (c) => {
    const { provider } = c.req.valid("param");
    knownProvider(provider);
    const body = c.req.valid("json") ?? {};
    const rows = await listConnections(db, { provider, containerTags: body.containerTags });
    if (!rows.length) return c.json([], 200);
    const docs = await connectionsDocuments(
      db,
      rows.map((r) => r.id),
      1000,
    );
    return c.json(
      docs.map((d) => ({
        id: d.id,
        createdAt: d.createdAt.toISOString(),
        status: d.status,
        summary: d.summary,
        title: d.title,
        type: d.type,
        updatedAt: d.updatedAt.toISOString(),
      })),
      200,
    );
  };

  const resources: RouteHandler<typeof routes.resources, AppEnv> = async (c) => {
    const row = await one(c.req.valid("param").connectionId);
    const q = c.req.valid("query");
    const { connector, ctx } = contextForConnection(service(), row);
    if (!connector.resources)
      throw badRequest(`${row.provider} connections have no resources to list`, "connectionId");
    const found = await setupErrors(async () => {
      try {
        return await connector.resources?.(ctx, { page: q.page, perPage: q.per_page, parentId: q.parent_id });
      } catch (error) {
        throw new ConnectionSetupError((error as Error).message, "connectionId");
      }
    });
    return c.json(found ?? { resources: [] }, 200);
  };

  const configure: RouteHandler<typeof routes.configure, AppEnv> = async (c) => {
    const row = await one(c.req.valid("param").connectionId);
    const { resources: chosen } = c.req.valid("json");
    await setupErrors(() => configureConnection(service(), row, chosen));
    return c.json(
      { message: `Configured ${chosen.length} resource(s); a sync has started`, success: true },
      200,
    );
  };

  const remove: RouteHandler<typeof routes.remove, AppEnv> = async (c) => {
    const { connectionIdOrProvider: target } = c.req.valid("param");
    const withDocuments = c.req.valid("query").deleteDocuments === "true";
    const svc = service();
    if (findConnector(target)) {
      // deleteByProvider: the provider's connections holding any of the tags.
      const tags = c.req.valid("json")?.containerTags;
      if (!tags?.length) throw badRequest("deleting by provider needs containerTags", "containerTags");
      const rows = await listConnections(db, { provider: target, containerTags: tags });
      if (!rows.length) throw notFound("connection");
      for (const row of rows) await removeConnection(svc, row, withDocuments);
      return c.json({ id: (rows[0] as { id: string }).id, provider: target }, 200);
    }
    const row = await one(target);
    await removeConnection(svc, row, withDocuments);
    return c.json({ id: row.id, provider: row.provider }, 200);
  };

  const pickerLink: RouteHandler<typeof routes.pickerLink, AppEnv> = async (c) => {
    const row = await one(c.req.valid("param").connectionId);
    const pickerUrl = await setupErrors(() => renewPickerLink(service(), row));
    return c.json({ pickerUrl }, 200);
  };

  return {
    pickerLink,
    list,
    create,
    getById,
    runs,
    syncOne,
    getByTag,
    importNow,
    listDocuments,
    resources,
    configure,
    remove,
  };
}
