import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../../config/logger.ts";
import { MemoryAlreadyForgottenError, MemoryNotFoundError } from "../../services/memories.ts";
import { SearchRequestError } from "../../services/search-documents.ts";
import type { ApiKeyRow } from "../../store/api-keys.ts";
import { ApiError } from "../errors.ts";
import type { KeyScope } from "../key-scope.ts";

/** The container tag Supermemory's memory server uses when a client names none. */
export const DEFAULT_CONTAINER_TAG = "sm_project_default";

/** Header that selects the container tag for a whole MCP connection (Supermemory's name for it: "project"). */
export const CONTAINER_TAG_HEADER = "x-sm-project";

/** Same characters as the REST API allows for container tags. */
export const CONTAINER_TAG_PATTERN = /^[A-Za-z0-9_:.-]{1,100}$/;

/** Who is calling and where they are: built per HTTP request from the bearer key and headers. */
export class McpCaller {
  constructor(
    readonly key: ApiKeyRow,
    readonly scope: KeyScope,
    /** x-sm-project, when the client sent one. */
    readonly headerTag: string | undefined,
  ) {}

  /**
   * The tag used when neither an argument nor x-sm-project names one: `sm_project_default` for an
   * admin key; for a scoped key the same tag if it is one of its own, else its first tag (the tag
   * REST writes of that key default to).
   */
  get defaultTag(): string {
    const own = this.scope.tags;
    if (!own || own.includes(DEFAULT_CONTAINER_TAG)) return DEFAULT_CONTAINER_TAG;
    return own[0] ?? DEFAULT_CONTAINER_TAG;
  }

  /** The container tag a call works in: its argument, else x-sm-project, else the default. 403 outside the key's scope. */
  tag(argument?: string): string {
    const tag = argument ?? this.headerTag ?? this.defaultTag;
    if (!CONTAINER_TAG_PATTERN.test(tag)) {
      throw new ApiError(
        400,
        "validation_error",
        "containerTag may contain only letters, digits, hyphens, underscores, colons and dots (1-100)",
      );
    }
    this.scope.check([tag]);
    return tag;
  }
}

/** A refusal or failure of a tool, as MCP reports it: a result with isError, so the model can read why. */
export function toolError(error: unknown, log: Logger): CallToolResult {
  return { isError: true, content: [{ type: "text", text: errorMessage(error, log) }] };
}

export function errorMessage(error: unknown, log: Logger): string {
  if (error instanceof ApiError) return `${error.code}: ${error.message}`;
  if (error instanceof MemoryNotFoundError) return `not_found: ${error.message}`;
  if (error instanceof MemoryAlreadyForgottenError) return `conflict: ${error.message}`;
  if (error instanceof SearchRequestError) return `invalid_request: ${error.message}`;
  log.error({ err: error }, "MCP call failed");
  return "internal_error: the call failed; see the service log";
}
