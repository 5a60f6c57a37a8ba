// The concurrent clients of bench/lib/route-latency.ts on a thread of their own: in the service's event loop they
// would take its main thread's time (sending, parsing answers) and delay its answers, which no client on another
// machine does. Their CPU is still this machine's, and is reported on its own (their thread id, read here).

import { readlinkSync } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
import { jsonClient } from "./http.ts";

export interface RouteRequest {
  method: string;
  path: string;
  body?: unknown;
}

export interface LoadClientsData {
  url: string;
  apiKey: string;
  clients: number;
  requests: RouteRequest[];
}

export interface LoadClientsResult {
  /** Latency of each answered request (2xx), in the order they ended. */
  times: number[];
  errors: number;
  wallMs: number;
  /** This thread's id in /proc/self/task (undefined off Linux), so its CPU can be told apart from the service's. */
  tid?: string;
}

function ownThreadId(): string | undefined {
  try {
    // /proc/thread-self links to /proc/<pid>/task/<tid> for the thread that reads it.
    return readlinkSync("/proc/thread-self").split("/").pop();
  } catch {
    return undefined;
  }
}

const data = workerData as LoadClientsData;
const port = parentPort;
if (!port) throw new Error("load-clients.worker.ts runs as a worker thread");

// A listener that stays (not `once`): with none left the thread would end as soon as it answered, and its
// ticks would be gone from /proc before the caller read them (the clients' CPU then showed as n/a).
let going = false;
port.on("message", async () => {
  if (going) return;
  going = true;
  const pool = jsonClient({
    baseUrl: data.url,
    apiKey: data.apiKey,
    connections: data.clients,
    timeoutMs: 60_000,
  });
  let next = 0;
  let errors = 0;
  const times: number[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: data.clients }, async () => {
      for (;;) {
        const r = data.requests[next++];
        if (!r) return;
        const res = await pool.request(r.method, r.path, r.body);
        if (res.ok) times.push(res.ms);
        else errors++;
      }
    }),
  );
  const result: LoadClientsResult = {
    times,
    errors,
    wallMs: performance.now() - started,
    tid: ownThreadId(),
  };
  pool.close();
  port.postMessage(result);
});
port.postMessage("ready");
