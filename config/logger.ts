import { asyncLocalStorage as activityContext } from "@temporalio/activity";
import pino from "pino";

export type Logger = pino.Logger;

/**
 * Inside a Temporal activity, every line names the workflow and activity it belongs to, so one grep
 * for a workflow id (`doc/<id>/<run>`, `sync/<id>`) gives its whole story across processes.
 */
function activityFields(): Record<string, string> {
  const info = activityContext.getStore()?.info;
  const workflow = info?.workflowExecution;
  if (!info || !workflow) return {};
  return { workflowId: workflow.workflowId, runId: workflow.runId, activity: info.activityType };
}

/** JSON lines for machines; readable lines when a person watches a terminal. */
export function createLogger(
  level: string = process.env.LOG_LEVEL ?? "info",
  destination?: pino.DestinationStream,
): Logger {
  const options: pino.LoggerOptions = { level, base: { service: "memory" }, mixin: activityFields };
  if (destination) return pino(options, destination);
  const pretty = process.stdout.isTTY && process.env.LOG_FORMAT !== "json";
  return pino({
    ...options,
    ...(pretty
      ? { transport: { target: "pino-pretty", options: { colorize: true, ignore: "pid,hostname,service" } } }
      : {}),
  });
}
