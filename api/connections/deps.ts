import type { ConnectionDeps } from "../../services/connections.ts";
import type { ApiDeps } from "../deps.ts";

/** What the connection services need, taken from the API's dependencies. */
export function connectionDeps(deps: ApiDeps): ConnectionDeps {
  return {
    config: deps.config,
    db: deps.db,
    blobs: deps.blobs,
    secrets: deps.secrets,
    syncs: deps.syncs,
    processing: deps.processing,
    network: {
      allowPrivateNetwork: deps.config.ALLOW_PRIVATE_NETWORK,
      timeoutMs: deps.config.FETCH_TIMEOUT_MS,
      maxBytes: deps.config.MAX_CONTENT_BYTES,
    },
    log: deps.log,
  };
}
