import pino from "pino";

export type Logger = pino.Logger;

/** JSON lines for machines; readable lines when a person watches a terminal. */
export function createLogger(level: string = process.env.LOG_LEVEL ?? "info"): Logger {
  const pretty = process.stdout.isTTY && process.env.LOG_FORMAT !== "json";
  return pino({
    level,
    base: { service: "memory" },
    ...(pretty
      ? { transport: { target: "pino-pretty", options: { colorize: true, ignore: "pid,hostname,service" } } }
      : {}),
  });
}
