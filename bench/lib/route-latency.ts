// Latency of HTTP routes on a running service: one client at a time, and several clients at once. Shared by
// the scenarios that measure search through the real service (bench/search-imported.ts, bench/search-memories.ts).

import { once } from "node:events";
import { Worker } from "node:worker_threads";
import { jsonClient } from "./http.ts";
import type { LoadClientsData, LoadClientsResult, RouteRequest } from "./load-clients.worker.ts";
import { threadCpuMeter } from "./proc.ts";
import { log, progress } from "./progress.ts";
import { type Summary, summarize } from "./stats.ts";

export type { RouteRequest };

/** One kind of request: `request` describes its i-th request (another query, another scope each time). */
export interface LoadRoute {
  route: string;
  /** Which tag the searches were scoped to. */
  scope: string;
  request: (i: number) => RouteRequest;
}

export interface RouteLatency {
  route: string;
  /** Which tag the searches were scoped to. */
  scope: string;
  client: Summary;
  /** The `timing` the API reports (server side). */
  server: Summary;
  errors: number;
  meanResults: number;
}

export interface ConcurrentLatency {
  route: string;
  scope: string;
  clients: number;
  requests: number;
  latency: Summary;
  errors: number;
  /** Requests per second over the whole measurement. */
  throughput: number;
  /**
   * CPU per request by thread of this process, which runs the service and the clients (absent in runs stored
   * before 98bb921 of 2026-11-29, and where /proc is missing): what bounds the throughput of a machine's cores.
   * The clients run on a thread of their own (`clientsMs`); in runs stored before 2026-12-03 they ran on the
   * main thread and were counted in `mainMs`.
   */
  cpuPerRequest?: {
    mainMs: number;
    busiestOtherMs: number;
    otherMs: number;
    machineMs: number;
    clientsMs?: number;
  };
}

interface ServiceAddress {
  url: string;
  apiKey: string;
}

/** Each route in turn, `requests` times one after another on one keep-alive connection, after 10 warm-up requests. */
export async function sequentialLatency(
  service: ServiceAddress,
  routes: readonly LoadRoute[],
  requests: number,
  label: string,
): Promise<RouteLatency[]> {
  const out: RouteLatency[] = [];
  const client = jsonClient({
    baseUrl: service.url,
    apiKey: service.apiKey,
    connections: 1,
    timeoutMs: 60_000,
  });
  try {
    for (const r of routes) {
      const send = (i: number) => {
        const q = r.request(i);
        return client.request(q.method, q.path, q.body);
      };
      for (let i = 0; i < 10; i++) await send(100_000 + i); // warm-up, not counted
      const times: number[] = [];
      const server: number[] = [];
      let errors = 0;
      let results = 0;
      const bar = progress(`${label}: ${r.route} in ${r.scope}`, requests);
      for (let i = 0; i < requests; i++) {
        const res = await send(i);
        if (!res.ok) errors++;
        else {
          times.push(res.ms);
          const body = res.body as { timing?: number; results?: unknown[] };
          if (typeof body.timing === "number") server.push(body.timing);
          results += body.results?.length ?? 0;
        }
        bar.update(i + 1);
      }
      bar.finish();
      out.push({
        route: r.route,
        scope: r.scope,
        client: summarize(times),
        server: summarize(server),
        errors,
        meanResults: results / Math.max(1, requests - errors),
      });
    }
  } finally {
    client.close();
  }
  return out;
}

/**
 * `clients` clients, each sending its next request of `route` when its last one is answered, `requests` in all,
 * from a worker thread (bench/lib/load-clients.worker.ts), so the service's event loop serves and does not send.
 */
export async function concurrentLatency(
  service: ServiceAddress,
  route: LoadRoute,
  clients: number,
  requests: number,
  label: string,
): Promise<ConcurrentLatency> {
  const data: LoadClientsData = {
    url: service.url,
    apiKey: service.apiKey,
    clients,
    requests: Array.from({ length: requests }, (_, i) => route.request(i)),
  };
  const url = new URL("./load-clients.worker.ts", import.meta.url).href;
  // A worker's own .ts entry fails even with tsx in its execArgv (its loader is not yet registered when the entry
  // is resolved); tsx's tsImport, from a tiny script, loads it with tsx's loader instead.
  const tsx = import.meta.resolve("tsx/esm/api");
  const worker = new Worker(
    `import(${JSON.stringify(tsx)}).then((m) => m.tsImport(${JSON.stringify(url)}, ${JSON.stringify(url)}))`,
    { eval: true, workerData: data },
  );
  try {
    // events.once rejects on the worker's "error"; an exit before it answers rejects through `ended`.
    const ended = once(worker, "exit").then(([code]) => {
      throw new Error(`the load clients' thread exited (${code}) before it answered`);
    });
    ended.catch(() => {});
    const answer = () => Promise.race([once(worker, "message").then(([m]) => m as unknown), ended]);
    await answer(); // "ready": the thread is up, so its start is not measured
    const cpu = threadCpuMeter();
    worker.postMessage("go");
    const done = (await answer()) as LoadClientsResult;
    const used = cpu.stop(done.tid);
    const latency = summarize(done.times);
    const { errors } = done;
    log(
      `${label}: ${clients} clients on ${route.route} in ${route.scope}: p95 ${latency.p95.toFixed(1)} ms, ${errors} errors`,
    );
    return {
      route: route.route,
      scope: route.scope,
      clients,
      requests,
      latency,
      errors,
      throughput: (requests / done.wallMs) * 1000,
      ...(used
        ? {
            cpuPerRequest: {
              mainMs: used.mainMs / requests,
              busiestOtherMs: used.busiestOtherMs / requests,
              otherMs: used.otherMs / requests,
              machineMs: used.machineMs / requests,
              ...(used.excludedMs !== undefined ? { clientsMs: used.excludedMs / requests } : {}),
            },
          }
        : {}),
    };
  } finally {
    await worker.terminate();
  }
}
