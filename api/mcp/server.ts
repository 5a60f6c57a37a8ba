import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { buildProfile } from "../../services/profile.ts";
import type { ApiDeps } from "../deps.ts";
import { ApiError } from "../errors.ts";
import { CONTAINER_TAG_HEADER, DEFAULT_CONTAINER_TAG, errorMessage, type McpCaller } from "./context.ts";
import { profileText, registerTools, visibleContainerTags } from "./tools.ts";

export const SERVER_NAME = "supermemory";
/** The major version follows Supermemory's memory server whose tool names (and earlier ones) this answers. */
export const SERVER_VERSION = "4.0.0";

const INSTRUCTIONS = `Long-term memory for this user. Save facts, preferences and decisions worth keeping with add_memory; look things up with search_memory before answering questions that may depend on earlier conversations. Memories live in container tags (spaces): the ${CONTAINER_TAG_HEADER} header or a containerTag argument selects one, else '${DEFAULT_CONTAINER_TAG}'. listSpaces shows the tags this key can use.`;

/** Errors of resources and prompts are protocol errors (tools answer isError results instead). */
async function orProtocolError<T>(deps: ApiDeps, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const code =
      error instanceof ApiError && error.status < 500 ? ErrorCode.InvalidRequest : ErrorCode.InternalError;
    throw new McpError(code, errorMessage(error, deps.log));
  }
}

/**
 * One server per HTTP request (stateless: any API process can answer any request). The caller's key
 * and scope are fixed for its lifetime; every tool, resource and prompt works through them.
 */
export function createMcpServer(deps: ApiDeps, caller: McpCaller): McpServer {
  const server = new McpServer(
    { name: SERVER_NAME, version: SERVER_VERSION },
    { instructions: INSTRUCTIONS, capabilities: { logging: {} } },
  );
  registerTools(server, deps, caller);

  server.registerResource(
    "profile",
    "supermemory://profile",
    {
      title: "Profile",
      description: "Profile facts (long-lived) and recent context of the effective container tag",
      mimeType: "text/markdown",
    },
    (uri) =>
      orProtocolError(deps, async () => {
        const tag = caller.tag();
        const { profile } = await buildProfile(deps, { containerTag: tag, threshold: 0 }, caller.scope.tags);
        return {
          contents: [
            { uri: uri.href, mimeType: "text/markdown", text: profileText(tag, profile) },
            {
              uri: `${uri.href}.json`,
              mimeType: "application/json",
              text: JSON.stringify({ containerTag: tag, ...profile }),
            },
          ],
        };
      }),
  );

  server.registerResource(
    "spaces",
    "supermemory://spaces",
    {
      title: "Spaces",
      description: "Container tags this key can see, with their document and memory counts",
      mimeType: "application/json",
    },
    (uri) =>
      orProtocolError(deps, async () => ({
        contents: [
          {
            uri: uri.href,
            mimeType: "application/json",
            text: JSON.stringify(await visibleContainerTags(deps, caller)),
          },
        ],
      })),
  );

  server.registerPrompt(
    "context",
    {
      title: "Memory context",
      description:
        "The user's profile and recent memories from a container tag (default: the connection's), to start a conversation with",
      argsSchema: {
        containerTag: z.string().optional().describe("Container tag to take the context from"),
      },
    },
    (args) =>
      orProtocolError(deps, async () => {
        const tag = caller.tag(args.containerTag || undefined);
        const { profile } = await buildProfile(deps, { containerTag: tag, threshold: 0 }, caller.scope.tags);
        const body =
          profile.static.length || profile.dynamic.length
            ? profileText(tag, profile)
            : `Nothing is remembered yet in container '${tag}'.`;
        return {
          description: `Profile and recent memories of container '${tag}'`,
          messages: [
            {
              role: "user",
              content: {
                type: "text",
                text: `Here is what you remember about me (memory container '${tag}'). Use it where it helps; do not repeat it back unasked.\n\n${body}`,
              },
            },
          ],
        };
      }),
  );
  return server;
}
