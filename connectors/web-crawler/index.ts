/**
 * Web crawler connector (`web-crawler`): crawls a web site from one or more start URLs and keeps one
 * document per HTML page, identified by its URL. No secrets.
 *
 * Config keys (startUrls, maxDepth, maxPages, sameOrigin, respectRobotsTxt, useSitemaps, include and
 * exclude patterns): see settings.ts.
 */

import { z } from "zod";
import type { Connector } from "../types.ts";
import { type WebCrawlerConfig, type WebCrawlerSecrets, webCrawlerConfigSchema } from "./settings.ts";
import { type Cursor, cursorSchema, fetchItem, initialCursor, listPage, verify } from "./sync.ts";

export const webCrawlerConnector: Connector<WebCrawlerConfig, WebCrawlerSecrets, Cursor> = {
  provider: "web-crawler",
  displayName: "Web crawler",
  configSchema: webCrawlerConfigSchema,
  secretKeys: [],
  secretsSchema: z.object({}) as unknown as z.ZodType<WebCrawlerSecrets>,
  listing: "full",
  cursorSchema,
  initialCursor,
  listPage,
  fetchItem,
  verify,
};
