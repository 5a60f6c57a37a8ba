import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeLlm {
  /** Base URL to configure as LLM_BASE_URL (…/v1). */
  url: string;
  /** Every chat request received, parsed. */
  requests: { model: string; messages: { role: string; content: string }[] }[];
  close(): Promise<void>;
}

/**
 * A local HTTP server that answers as an OpenAI-compatible chat endpoint (POST /v1/chat/completions),
 * with the reply the test chooses for each request.
 */
export async function startFakeLlm(
  reply: (messages: { role: string; content: string }[]) => string | { status: number; body: string },
): Promise<FakeLlm> {
  const requests: FakeLlm["requests"] = [];
  const server: Server = createServer((req, res) => {
    let raw = "";
    req.on("data", (chunk) => {
      raw += chunk;
    });
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
        res.writeHead(404, { "content-type": "application/json" }).end('{"error":{"message":"not found"}}');
        return;
      }
      const body = JSON.parse(raw);
      requests.push(body);
      const answer = reply(body.messages);
      if (typeof answer !== "string") {
        res.writeHead(answer.status, { "content-type": "application/json" }).end(answer.body);
        return;
      }
      res.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({
          id: `chatcmpl-${requests.length}`,
          object: "chat.completion",
          created: Math.floor(Date.now() / 1000),
          model: body.model,
          choices: [{ index: 0, message: { role: "assistant", content: answer }, finish_reason: "stop" }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
