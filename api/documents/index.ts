import { OpenAPIHono } from "@hono/zod-openapi";
import type { ApiDeps, AppEnv } from "../deps.ts";
import { validationHook } from "../validation.ts";
import { createDocumentHandlers, createFileLinkHandler } from "./handlers.ts";
import * as routes from "./routes.ts";

/** Mounted at /v3/documents and, for clients of the earlier SDK, at /v3/memories. */
export function documentsApp(deps: ApiDeps) {
  const h = createDocumentHandlers(deps);
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
    .openapi(routes.addDocument, h.addDocument)
    .openapi(routes.uploadFile, h.uploadFile)
    .openapi(routes.batchAdd, h.batchAdd)
    .openapi(routes.listDocuments, h.listDocuments)
    .openapi(routes.listProcessing, h.listProcessing)
    .openapi(routes.deleteBulk, h.deleteBulk)
    .openapi(routes.listChunks, h.listChunks)
    .openapi(routes.documentFileUrl, h.documentFileUrl)
    .openapi(routes.reprocessDocument, h.reprocessDocument)
    .openapi(routes.getDocument, h.getDocument)
    .openapi(routes.updateDocument, h.updateDocument)
    .openapi(routes.deleteDocument, h.deleteDocument);
}

/** The download behind a disk file link: mounted at /v3/documents ahead of bearer auth, the link's signature is its key. */
export function documentFileLinksApp(deps: ApiDeps) {
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(
    routes.downloadDocumentFile,
    createFileLinkHandler(deps),
  );
}
