// `mcp`: the memory server over stdio, for MCP clients that only start commands. It is a bridge, not
// a second server: every JSON-RPC message read on stdin is POSTed to the running service's /mcp
// (Streamable HTTP) and every answer is written to stdout. stdout carries only MCP messages; notes
// and errors go to stderr.

import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  type InitializeResult,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
} from "@modelcontextprotocol/sdk/types.js";
import { CliError, type ResolvedConnection } from "./client.ts";

/** Same characters as the service accepts for a container tag. */
const TAG = /^[A-Za-z0-9_:.-]{1,100}$/;

export interface McpBridgeOptions {
  /** Sent as x-sm-project: the container tag of every call that names none. */
  containerTag?: string;
  stdin?: NodeJS.ReadableStream;
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream;
}

/** Runs until stdin ends (the client closed the connection). */
export async function mcpCommand(connection: ResolvedConnection, opts: McpBridgeOptions = {}): Promise<void> {
  const stderr = opts.stderr ?? process.stderr;
  const note = (message: string) => stderr.write(`memory mcp: ${message}\n`);
  if (opts.containerTag !== undefined && !TAG.test(opts.containerTag)) {
    throw new CliError(
      "--project may contain only letters, digits, hyphens, underscores, colons and dots (1-100)",
      2,
    );
  }
  const stdin = opts.stdin ?? process.stdin;
  const headers: Record<string, string> = { authorization: `Bearer ${connection.key}` };
  if (opts.containerTag) headers["x-sm-project"] = opts.containerTag;

  const local = new StdioServerTransport(
    stdin as typeof process.stdin,
    (opts.stdout ?? process.stdout) as typeof process.stdout,
  );
  const remote = new StreamableHTTPClientTransport(new URL(`${connection.url}/mcp`), {
    requestInit: { headers },
  });
  let initializeId: string | number | undefined;

  remote.onmessage = (message: JSONRPCMessage) => {
    // The negotiated version goes on every later request, as an MCP client's own transport does.
    if (initializeId !== undefined && isJSONRPCResultResponse(message) && message.id === initializeId) {
      initializeId = undefined;
      const version = (message.result as InitializeResult).protocolVersion;
      if (version) remote.setProtocolVersion(version);
    }
    local.send(message).catch((error) => note(`cannot write to stdout: ${(error as Error).message}`));
  };
  // Refused POSTs are reported where they are sent (below); this catches the rest.
  remote.onerror = (error: Error & { code?: unknown }) => {
    if (typeof error.code !== "number") note(`service: ${error.message}`);
  };
  local.onerror = (error) => note(`stdin: ${error.message}`);

  local.onmessage = (message: JSONRPCMessage) => {
    if (isJSONRPCRequest(message) && message.method === "initialize") initializeId = message.id;
    remote.send(message).catch((error: Error & { code?: unknown }) => {
      const status = typeof error.code === "number" && error.code >= 400 ? error.code : undefined;
      const why =
        status === 401
          ? `401: the key from ${connection.keySource} was refused`
          : `${status ? `${status}: ` : ""}${error.message}`;
      note(`${connection.url}/mcp: ${why}`);
      // The client waits for an answer to each request: give it the failure rather than silence.
      if (isJSONRPCRequest(message)) {
        local
          .send({
            jsonrpc: "2.0",
            id: message.id,
            error: {
              code: -32000,
              message: `the memory service at ${connection.url} refused or failed: ${why}`,
            },
          })
          .catch(() => {});
      }
    });
  };

  await remote.start();
  await local.start();
  note(
    `bridging stdio to ${connection.url}/mcp${opts.containerTag ? ` (container tag ${opts.containerTag})` : ""}`,
  );
  await new Promise<void>((resolve) => {
    stdin.once("end", resolve);
    stdin.once("close", resolve);
  });
  await local.close();
  await remote.close();
}
