// Latency of HTTP routes on a running service: one client at a time, and several clients at once. Shared by
// the scenarios that measure search through the real service (bench/search-imported.ts, bench/search-memories.ts).

import { type JsonClient, jsonClient, type Outcome } from "./http.ts";
import { threadCpuMeter } from "./proc.ts";
import { log, progress } from "./progress.ts";
import { type Summary, summarize } from "./stats.ts";

/** One kind of request: `send` makes its i-th request (another query, another scope each time). */
export interface LoadRoute {
  route: string;
  /** Which tag the searches were scoped to. */
  scope: string;
  send: (c: JsonClient, i: number) => Promise<Outcome>;
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
   * CPU per request by thread of this process, which runs the service and the clients (absent in runs before
   * stop 59, and where /proc is missing): what bounds the throughput of a machine's cores.
   */
  cpuPerRequest?: { mainMs: number; busiestOtherMs: number; otherMs: number; machineMs: number };
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
      for (let i = 0; i < 10; i++) await r.send(client, 100_000 + i); // warm-up, not counted
      const times: number[] = [];
      const server: number[] = [];
      let errors = 0;
      let results = 0;
      const bar = progress(`${label}: ${r.route} in ${r.scope}`, requests);
      for (let i = 0; i < requests; i++) {
        const res = await r.send(client, i);
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

/** `clients` clients, each sending its next request of `route` when its last one is answered, `requests` in all. */
export async function concurrentLatency(
  service: ServiceAddress,
  route: LoadRoute,
  clients: number,
  requests: number,
  label: string,
): Promise<ConcurrentLatency> {
  const pool = jsonClient({
    baseUrl: service.url,
    apiKey: service.apiKey,
    connections: clients,
    timeoutMs: 60_000,
  });
  try {
    let next = 0;
    let errors = 0;
    const times: number[] = [];
    const started = performance.now();
    const cpu = threadCpuMeter();
    await Promise.all(
      Array.from({ length: clients }, async () => {
        for (;;) {
          const i = next++;
          if (i >= requests) return;
          const res = await route.send(pool, i);
          if (res.ok) times.push(res.ms);
          else errors++;
        }
      }),
    );
    const wall = performance.now() - started;
    const used = cpu.stop();
    const latency = summarize(times);
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
      throughput: (requests / wall) * 1000,
      ...(used
        ? {
            cpuPerRequest: {
              mainMs: used.mainMs / requests,
              busiestOtherMs: used.busiestOtherMs / requests,
              otherMs: used.otherMs / requests,
              machineMs: used.machineMs / requests,
            },
          }
        : {}),
    };
  } finally {
    pool.close();
  }
}
