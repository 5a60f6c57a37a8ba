// Every connector the engine knows, by provider slug. The engine and the API import this module only,
// never a provider's module directly.

import { githubConnector } from "./github/index.ts";
import { gmail } from "./gmail/index.ts";
import { googleDriveConnector } from "./google-drive/index.ts";
import { imap } from "./imap/index.ts";
import { notionConnector } from "./notion/index.ts";
import { onedriveConnector } from "./onedrive/index.ts";
import { s3Connector } from "./s3/index.ts";
import type { Connector } from "./types.ts";
import { webCrawlerConnector } from "./web-crawler/index.ts";

// biome-ignore lint/suspicious/noExplicitAny: connectors differ in config, secrets, cursor and carry types
type AnyConnector = Connector<any, any, any, any>;

const connectors = new Map<string, AnyConnector>(
  (
    [
      s3Connector,
      webCrawlerConnector,
      imap,
      gmail,
      githubConnector,
      notionConnector,
      googleDriveConnector,
      onedriveConnector,
    ] as AnyConnector[]
  ).map((c) => [c.provider, c]),
);

export function findConnector(provider: string): AnyConnector | undefined {
  return connectors.get(provider);
}

/** Every connector, in registration order (what is derived from their declarations, e.g. OAuth apps). */
export function allConnectors(): AnyConnector[] {
  return [...connectors.values()];
}

/** Lets connectors release what they keep open (mail sessions) when a worker stops. */
export async function shutdownConnectors(): Promise<void> {
  await Promise.allSettled([...connectors.values()].map((c) => c.shutdown?.()));
}
