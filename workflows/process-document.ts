import {
  ActivityFailure,
  type ActivityOptions,
  ApplicationFailure,
  patched,
  proxyActivities,
  proxyLocalActivities,
  workflowInfo,
} from "@temporalio/workflow";
// Type-only: the workflow bundle never contains activity code.
import type { DocumentActivities } from "../activities/document-processing.ts";
import {
  EXTRACTION_FAILED,
  heavyQueueOf,
  type ProcessDocumentWorkflow,
  type ProcessingOutcome,
  type ProcessingRef,
  SUPERSEDED,
} from "../contracts/workflows.ts";

const nonRetryableErrorTypes = [SUPERSEDED, EXTRACTION_FAILED];

/** What identification decided the content is (from the activity's type: workflows import no pipeline code). */
type ContentType = Awaited<ReturnType<DocumentActivities["identifyContent"]>>["type"];

/**
 * Identifying and, for text-like content, extracting, chunking, embedding and storing a short text: a local
 * activity, run by the worker that holds the workflow task, so a short document costs Temporal one workflow task
 * instead of three tasks and an activity's history (measured: a third less of the Temporal server's CPU per
 * document, and more documents per second). Its queue is bounded by admission; a crash retries the workflow task
 * and with it this step, which is idempotent (fenced by the run, chunks replaced).
 */
const localPreparation = proxyLocalActivities<DocumentActivities>({
  startToCloseTimeout: "10 minutes",
  retry: {
    initialInterval: "1s",
    backoffCoefficient: 2,
    maximumInterval: "30s",
    maximumAttempts: 5,
    nonRetryableErrorTypes,
  },
});

/** Fetching and identifying: network-bound, a few quick retries. */
const identification = proxyActivities<DocumentActivities>({
  startToCloseTimeout: "5 minutes",
  retry: {
    initialInterval: "1s",
    backoffCoefficient: 2,
    maximumInterval: "30s",
    maximumAttempts: 5,
    nonRetryableErrorTypes,
  },
});

/** Text, web pages, mail, .docx and .pptx: parsing in a CPU thread, seconds at most. */
const textExtraction = proxyActivities<DocumentActivities>({
  startToCloseTimeout: "5 minutes",
  heartbeatTimeout: "30 seconds",
  retry: {
    initialInterval: "1s",
    backoffCoefficient: 2,
    maximumInterval: "30s",
    maximumAttempts: 3,
    nonRetryableErrorTypes,
  },
});

/** PDF and images may need OCR: minutes for long scans. */
const ocrOptions: ActivityOptions = {
  startToCloseTimeout: "30 minutes",
  heartbeatTimeout: "30 seconds",
  retry: {
    initialInterval: "2s",
    backoffCoefficient: 2,
    maximumInterval: "1 minute",
    maximumAttempts: 3,
    nonRetryableErrorTypes,
  },
};

/** Audio and video: transcription runs at a fraction of real time, so allow hours. */
const mediaOptions: ActivityOptions = {
  startToCloseTimeout: "3 hours",
  heartbeatTimeout: "30 seconds",
  retry: {
    initialInterval: "5s",
    backoffCoefficient: 2,
    maximumInterval: "2 minutes",
    maximumAttempts: 3,
    nonRetryableErrorTypes,
  },
};

/** OCR and transcription go to the heavy queue (runs started before it existed keep the main one). */
function heavyExtraction() {
  const taskQueue = patched("heavy-queue") ? heavyQueueOf(workflowInfo().taskQueue) : undefined;
  return {
    ocr: proxyActivities<DocumentActivities>({ ...ocrOptions, ...(taskQueue ? { taskQueue } : {}) }),
    media: proxyActivities<DocumentActivities>({ ...mediaOptions, ...(taskQueue ? { taskQueue } : {}) }),
  };
}

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

/**
 * Memory extraction calls an LLM (seconds to minutes per answer): a few retries for an endpoint that
 * is down; it is optional, so after them the document is done without memories.
 */
const memoryExtraction = proxyActivities<DocumentActivities>({
  startToCloseTimeout: "15 minutes",
  heartbeatTimeout: "5 minutes",
  retry: {
    initialInterval: "5s",
    backoffCoefficient: 3,
    maximumInterval: "1 minute",
    maximumAttempts: 3,
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

export async function processDocument(ref: ProcessingRef): Promise<ProcessingOutcome> {
  try {
    // Runs started before the compact pipeline existed replay the stage-per-activity one below.
    if (patched("compact-pipeline")) return await compactPipeline(ref);
    const { type } = await identification.identifyContent(ref);
    await extractByType(type, ref);
    await local.chunkDocument(ref);
    await embedding.embedDocument(ref);
    // Runs started before this step existed replay without it.
    if (patched("memory-extraction")) await extractMemoriesOrRecordWhyNot(ref);
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

/**
 * The same stages in fewer activities: a short text is done after one, a long one or a file after
 * the extraction it needs and one resumable embedding; memory extraction, when on, comes after.
 */
async function compactPipeline(ref: ProcessingRef): Promise<ProcessingOutcome> {
  const prepared = await localPreparation.prepareDocument(ref).catch((error: unknown) => {
    // A local activity's failure reaches the workflow as its cause alone, without the ActivityFailure around
    // it that names the step; name it here, so the reason reads like any other step's.
    throw error instanceof ApplicationFailure ? new LocalStepFailure("prepareDocument", error) : error;
  });
  if (prepared.stage === "done") return "done";
  if (prepared.stage === "identified") {
    await extractByType(prepared.type, ref);
    await local.chunkDocument(ref);
  }
  if (prepared.stage !== "embedded") {
    const { done } = await embedding.embedAndFinish(ref);
    if (done) return "done";
  }
  await extractMemoriesOrRecordWhyNot(ref);
  await local.indexDocument(ref);
  return "done";
}

/** OCR for PDFs and images, transcription for audio and video (both on the heavy queue), parsing for the rest. */
async function extractByType(type: ContentType, ref: ProcessingRef): Promise<void> {
  if (type === "pdf" || type === "image") {
    const { ocr } = heavyExtraction();
    await (type === "pdf" ? ocr.extractPdf(ref) : ocr.extractImage(ref));
  } else if (type === "audio" || type === "video") {
    const { media } = heavyExtraction();
    await (type === "audio" ? media.extractAudio(ref) : media.extractVideo(ref));
  } else await textExtraction.extractText(ref);
}

async function extractMemoriesOrRecordWhyNot(ref: ProcessingRef): Promise<void> {
  try {
    await memoryExtraction.extractDocumentMemories(ref);
  } catch (error) {
    if (failureType(error) === SUPERSEDED) throw error;
    await bookkeeping.recordMemoryExtractionFailure({ ...ref, reason: failureReason(error) });
  }
}

/** The failure of a local activity's last attempt, with the step it came from. */
class LocalStepFailure extends Error {
  constructor(
    readonly step: string,
    override readonly cause: ApplicationFailure,
  ) {
    super(cause.message);
    this.name = "LocalStepFailure";
  }
}

function failureType(error: unknown): string | undefined {
  if (
    (error instanceof ActivityFailure || error instanceof LocalStepFailure) &&
    error.cause instanceof ApplicationFailure
  )
    return error.cause.type ?? undefined;
  return undefined;
}

function failureReason(error: unknown): string {
  if (error instanceof LocalStepFailure) {
    const retried = error.cause.nonRetryable ? "" : " (gave up after retries)";
    return `${error.step}: ${error.cause.message}${retried}`;
  }
  if (error instanceof ActivityFailure) {
    const cause = error.cause;
    const message = cause?.message || error.message;
    const retried =
      cause instanceof ApplicationFailure && cause.nonRetryable ? "" : " (gave up after retries)";
    return `${error.activityType}: ${message}${retried}`;
  }
  return error instanceof Error ? error.message : String(error);
}

// The shape temporal/processing-client.ts starts it with.
processDocument satisfies ProcessDocumentWorkflow;
