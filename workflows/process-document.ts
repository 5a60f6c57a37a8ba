import { ActivityFailure, ApplicationFailure, proxyActivities } from "@temporalio/workflow";
// Type-only: the workflow bundle never contains activity code.
import type { DocumentActivities, ProcessingRef } from "../activities/document-processing.ts";
import { EXTRACTION_FAILED, SUPERSEDED } from "./failure-types.ts";

const nonRetryableErrorTypes = [SUPERSEDED, EXTRACTION_FAILED];

/** Fetching and parsing: network-bound, a few quick retries. */
const extraction = proxyActivities<DocumentActivities>({
  startToCloseTimeout: "5 minutes",
  heartbeatTimeout: "1 minute",
  retry: {
    initialInterval: "1s",
    backoffCoefficient: 2,
    maximumInterval: "30s",
    maximumAttempts: 5,
    nonRetryableErrorTypes,
  },
});

/** Splitting and indexing: local and fast; retries only cover store hiccups. */
const local = proxyActivities<DocumentActivities>({
  startToCloseTimeout: "2 minutes",
  retry: {
    initialInterval: "1s",
    backoffCoefficient: 2,
    maximumInterval: "20s",
    maximumAttempts: 8,
    nonRetryableErrorTypes,
  },
});

/** Embedding: CPU-bound and long for big documents; heartbeats let a crashed attempt resume where it stopped. */
const embedding = proxyActivities<DocumentActivities>({
  startToCloseTimeout: "1 hour",
  heartbeatTimeout: "2 minutes",
  retry: {
    initialInterval: "2s",
    backoffCoefficient: 2,
    maximumInterval: "1 minute",
    maximumAttempts: 10,
    nonRetryableErrorTypes,
  },
});

/** Recording the failure must not itself give up while the store is briefly unavailable. */
const bookkeeping = proxyActivities<DocumentActivities>({
  startToCloseTimeout: "30s",
  retry: {
    initialInterval: "1s",
    backoffCoefficient: 2,
    maximumInterval: "30s",
    maximumAttempts: 50,
    nonRetryableErrorTypes,
  },
});

export type ProcessingOutcome = "done" | "failed" | "superseded";

export async function processDocument(ref: ProcessingRef): Promise<ProcessingOutcome> {
  try {
    await extraction.extractDocument(ref);
    await local.chunkDocument(ref);
    await embedding.embedDocument(ref);
    await local.indexDocument(ref);
    return "done";
  } catch (error) {
    if (failureType(error) === SUPERSEDED) return "superseded";
    try {
      await bookkeeping.failDocument({ ...ref, reason: failureReason(error) });
    } catch (inner) {
      if (failureType(inner) === SUPERSEDED) return "superseded";
      throw inner;
    }
    return "failed";
  }
}

function failureType(error: unknown): string | undefined {
  if (error instanceof ActivityFailure && error.cause instanceof ApplicationFailure)
    return error.cause.type ?? undefined;
  return undefined;
}

function failureReason(error: unknown): string {
  if (error instanceof ActivityFailure) {
    const cause = error.cause;
    const message = cause?.message || error.message;
    const retried =
      cause instanceof ApplicationFailure && cause.nonRetryable ? "" : " (gave up after retries)";
    return `${error.activityType}: ${message}${retried}`;
  }
  return error instanceof Error ? error.message : String(error);
}
