/**
 * The runs scripts/record-histories.ts records, one per interesting path of each workflow, with stand-in
 * activities. A history keeps only what activities returned (plain data) and how they failed, so a stand-in
 * that returns the real activity's shape records the same history as the service would, without a store, a
 * model or a network. The shapes follow the activity types in activities/; a scenario holds the stand-ins of
 * every version of its workflow (the pipeline before the compact one calls identifyContent and embedDocument,
 * the compact one prepareDocument and embedAndFinish), so one scenario records against any commit.
 */
import { ApplicationFailure, Context } from "@temporalio/activity";
import type { DocumentActivities } from "../activities/document-processing.ts";
import type { FileSweepActivities } from "../activities/file-sweep.ts";
import type { KeyNoticeActivities } from "../activities/key-notices.ts";
import type { MaintenanceActivities } from "../activities/maintenance.ts";
import type { ReembedActivities } from "../activities/reembed.ts";
import type { PageInput, PageResult, SyncActivities } from "../activities/sync.ts";
import type { WebhookActivities } from "../activities/webhooks.ts";
import { AUTH_EXPIRED, EXTRACTION_FAILED, type ProcessingRef, SUPERSEDED } from "../contracts/workflows.ts";
import type { SyncCounts } from "../store/schema/sync-runs.ts";

export interface HistoryScenario {
  /** The workflow type, as workflows/index.ts exports it. */
  workflowType: string;
  /** The file stem of the workflow's module, so histories are named like the code they guard. */
  workflowFile: string;
  name: string;
  args: unknown[];
  activities: Record<string, (...args: never[]) => Promise<unknown>>;
  /** Workflows this run starts (a schedule's child) that must finish before the worker stops. */
  startsWorkflowIds?: string[];
  /**
   * A workflow started first, that this one meets running (a sync a schedule asks to sync again), recorded
   * with it under its own name. The scenario's workflow starts once `ready` resolves; `release` lets the
   * workflow started first go on once the scenario's workflow has finished.
   */
  runningBefore?: {
    name: string;
    workflowType: string;
    workflowId: string;
    args: unknown[];
    ready: Promise<void>;
    release: () => void;
  };
}

type ContentType = Awaited<ReturnType<DocumentActivities["identifyContent"]>>["type"];
type PreparedStage = Awaited<ReturnType<DocumentActivities["prepareDocument"]>>["stage"];
type MemorySummary = Awaited<ReturnType<DocumentActivities["extractDocumentMemories"]>>;

interface DocumentRun {
  type: ContentType;
  /** How far the compact pipeline's one-step preparation gets (short texts: all the way). */
  prepared: PreparedStage;
  /** Whether embedAndFinish marks the document done (no LLM configured, so no memory extraction follows). */
  finishedByEmbedding: boolean;
  chunks: number;
  memories: MemorySummary | ApplicationFailure;
  /**
   * The steps that fail and how: one step of the pipeline has a different activity in each version (the first
   * is identifyContent, or prepareDocument in the compact pipeline), so the failure names both.
   */
  failure?: { steps: (keyof DocumentActivities)[]; error: ApplicationFailure };
}

function documentActivities(run: DocumentRun): HistoryScenario["activities"] {
  const extracted = { chars: run.chunks * 450 };
  const steps = {
    identifyContent: async () => ({ type: run.type }),
    prepareDocument: async () => ({ type: run.type, stage: run.prepared }),
    extractText: async () => extracted,
    extractPdf: async () => extracted,
    extractImage: async () => extracted,
    extractAudio: async () => extracted,
    extractVideo: async () => extracted,
    chunkDocument: async () => ({ chunks: run.chunks }),
    embedDocument: async () => ({ embedded: run.chunks }),
    embedAndFinish: async () => ({ embedded: run.chunks, done: run.finishedByEmbedding }),
    extractDocumentMemories: async () => {
      if (run.memories instanceof ApplicationFailure) throw run.memories;
      return run.memories;
    },
    recordMemoryExtractionFailure: async (_input: ProcessingRef & { reason: string }) => {},
    indexDocument: async () => {},
    failDocument: async (_input: ProcessingRef & { reason: string }) => {},
  } satisfies Partial<Record<keyof DocumentActivities, (input: never) => Promise<unknown>>>;
  const { failure } = run;
  if (!failure) return steps;
  const failing = async () => {
    throw failure.error;
  };
  return { ...steps, ...Object.fromEntries(failure.steps.map((step) => [step, failing])) };
}

const memoriesOff: MemorySummary = { status: "off", memories: 0 };
const ref = (documentId: string): ProcessingRef => ({ documentId, run: 1 });

function processDocumentScenario(name: string, run: DocumentRun): HistoryScenario {
  return {
    workflowType: "processDocument",
    workflowFile: "process-document",
    name,
    args: [ref(`doc-${name}`)],
    activities: documentActivities(run),
  };
}

const documentScenarios: HistoryScenario[] = [
  processDocumentScenario("short-text-done", {
    type: "text",
    prepared: "done",
    finishedByEmbedding: true,
    chunks: 3,
    memories: memoriesOff,
  }),
  processDocumentScenario("long-text-done", {
    type: "text",
    prepared: "chunked",
    finishedByEmbedding: true,
    chunks: 90,
    memories: memoriesOff,
  }),
  // An OCR'd PDF on the heavy queue, with an LLM configured that refuses the call: the memory step's failure
  // is recorded and the document still ends done.
  processDocumentScenario("pdf-done-memories-failed", {
    type: "pdf",
    prepared: "identified",
    finishedByEmbedding: false,
    chunks: 12,
    memories: ApplicationFailure.create({
      type: "LlmRequestRefused",
      message: "the LLM endpoint answered 401 Unauthorized",
      nonRetryable: true,
    }),
  }),
  processDocumentScenario("damaged-pdf-failed", {
    type: "pdf",
    prepared: "identified",
    finishedByEmbedding: false,
    chunks: 0,
    memories: memoriesOff,
    failure: {
      steps: ["extractPdf"],
      error: ApplicationFailure.create({
        type: EXTRACTION_FAILED,
        message: "the PDF is damaged: Invalid PDF structure",
        nonRetryable: true,
      }),
    },
  }),
  // Identification refuses the content: the first step fails (a local activity in the compact pipeline).
  processDocumentScenario("unsupported-failed", {
    type: "text",
    prepared: "identified",
    finishedByEmbedding: false,
    chunks: 0,
    memories: memoriesOff,
    failure: {
      steps: ["identifyContent", "prepareDocument"],
      error: ApplicationFailure.create({
        type: EXTRACTION_FAILED,
        message: "unsupported content type application/x-msdownload",
        nonRetryable: true,
      }),
    },
  }),
  // A newer update of the document took over while its text was being split: the run ends quietly.
  processDocumentScenario("superseded", {
    type: "text",
    prepared: "identified",
    finishedByEmbedding: false,
    chunks: 0,
    memories: memoriesOff,
    failure: {
      steps: ["chunkDocument"],
      error: ApplicationFailure.create({
        type: SUPERSEDED,
        message: "run 1 of doc-superseded was superseded by run 2",
        nonRetryable: true,
      }),
    },
  }),
];

const noCounts: SyncCounts = { added: 0, updated: 0, deleted: 0, unchanged: 0, failed: 0 };

/** A source of two pages: the cursor names the page to fetch, the last one hands the connector's delta token on. */
function twoPageSync(connectionId: string) {
  const pages: Record<string, PageResult> = {
    first: { next: { page: "second" }, counts: { ...noCounts, added: 2 } },
    second: { next: null, counts: { ...noCounts, added: 1, updated: 1 }, carry: { deltaToken: "delta-2" } },
  };
  return {
    beginSync: async (): ReturnType<SyncActivities["beginSync"]> => ({
      runId: `${connectionId}-run`,
      cursor: { page: "first" },
      listing: "full",
    }),
    syncPage: async (input: PageInput): ReturnType<SyncActivities["syncPage"]> => {
      const page = pages[(input.cursor as { page: string }).page];
      if (!page) throw new Error(`no page ${JSON.stringify(input.cursor)}`);
      return page;
    },
    sweepUnseen: async (): ReturnType<SyncActivities["sweepUnseen"]> => ({ deleted: 1 }),
    finishSync: async (): ReturnType<SyncActivities["finishSync"]> => {},
  };
}

/** A promise and the function that resolves it: lets a stand-in activity wait for the recorder, and tell it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/**
 * A sync whose first page lasts until the scheduled run has asked it to sync again: it then finishes its pass
 * and continues as new for one more (started as an import).
 */
function busySync(): Pick<HistoryScenario, "activities" | "runningBefore"> {
  const firstPageEntered = gate();
  const firstPageReleased = gate();
  const source = twoPageSync("conn-busy");
  return {
    activities: {
      ...source,
      syncPage: async (input: PageInput): ReturnType<SyncActivities["syncPage"]> => {
        if ((input.cursor as { page: string }).page === "first") {
          firstPageEntered.open();
          await firstPageReleased.opened;
        }
        return source.syncPage(input);
      },
    },
    runningBefore: {
      name: "resync-requested",
      workflowType: "syncConnection",
      workflowId: "sync/conn-busy",
      args: [{ connectionId: "conn-busy", trigger: "import" }],
      ready: firstPageEntered.opened,
      release: firstPageReleased.open,
    },
  };
}

const syncScenarios: HistoryScenario[] = [
  {
    workflowType: "syncConnection",
    workflowFile: "sync-connection",
    name: "two-pages-done",
    args: [{ connectionId: "conn-two-pages", trigger: "import" }],
    activities: twoPageSync("conn-two-pages"),
  },
  // One page per workflow run: the first run continues as new, the second finishes (both runs are recorded).
  {
    workflowType: "syncConnection",
    workflowFile: "sync-connection",
    name: "continued-as-new",
    args: [{ connectionId: "conn-continued", trigger: "import", pagesPerRun: 1 }],
    activities: twoPageSync("conn-continued"),
  },
  {
    workflowType: "syncConnection",
    workflowFile: "sync-connection",
    name: "auth-expired",
    args: [{ connectionId: "conn-auth-expired", trigger: "schedule" }],
    activities: {
      ...twoPageSync("conn-auth-expired"),
      syncPage: async () => {
        throw ApplicationFailure.create({
          type: AUTH_EXPIRED,
          message: "the provider refused the token: invalid_grant",
          nonRetryable: true,
        });
      },
    },
  },
  {
    workflowType: "scheduledSync",
    workflowFile: "sync-connection",
    name: "scheduled-starts-sync",
    args: ["conn-scheduled"],
    activities: twoPageSync("conn-scheduled"),
    startsWorkflowIds: ["sync/conn-scheduled"],
  },
  // The connection's sync is running when its schedule fires: the scheduled run signals it instead.
  {
    workflowType: "scheduledSync",
    workflowFile: "sync-connection",
    name: "scheduled-signals-running-sync",
    args: ["conn-busy"],
    ...busySync(),
  },
];

const webhookScenarios: HistoryScenario[] = [
  {
    workflowType: "webhookDelivery",
    workflowFile: "deliver-webhook",
    name: "delivered-after-retry",
    args: [{ deliveryId: "delivery-retried" }],
    activities: {
      // The receiver is down for the first attempt: Temporal retries it after the policy's first interval.
      deliverWebhook: async (): ReturnType<WebhookActivities["deliverWebhook"]> => {
        if (Context.current().info.attempt === 1)
          throw ApplicationFailure.create({
            type: "WebhookNotDelivered",
            message: "the receiver answered 503",
          });
        return { status: 200 };
      },
      markWebhookDeliveryFailed: async (): ReturnType<WebhookActivities["markWebhookDeliveryFailed"]> => {},
    },
  },
  {
    workflowType: "webhookDelivery",
    workflowFile: "deliver-webhook",
    name: "abandoned",
    args: [{ deliveryId: "delivery-abandoned" }],
    activities: {
      deliverWebhook: async (): ReturnType<WebhookActivities["deliverWebhook"]> => {
        throw ApplicationFailure.create({
          type: "WebhookAbandoned",
          message: "the webhook was deleted",
          nonRetryable: true,
        });
      },
      markWebhookDeliveryFailed: async (): ReturnType<WebhookActivities["markWebhookDeliveryFailed"]> => {},
    },
  },
];

const maintenanceScenarios: HistoryScenario[] = [
  {
    workflowType: "reembedVectors",
    workflowFile: "reembed",
    name: "two-tables-done",
    args: [{ model: "bge-small-en-v1.5", table: "chunks", afterId: "", migrated: 0 }],
    activities: {
      // Fewer rows than a page in each table: one page each, then the check for rows written meanwhile.
      reembedPage: async (page: { table: string }): ReturnType<ReembedActivities["reembedPage"]> =>
        page.table === "chunks" ? { migrated: 40, lastId: "chunk-40" } : { migrated: 7, lastId: "memory-7" },
      countStaleVectors: async (): ReturnType<ReembedActivities["countStaleVectors"]> => ({
        chunks: 0,
        memories: 0,
      }),
      finishReembed: async (): ReturnType<ReembedActivities["finishReembed"]> => ({
        droppedIndexes: ["chunks_embedding_use_lite_idx"],
      }),
    },
  },
  {
    workflowType: "fileSweep",
    workflowFile: "file-sweep",
    name: "done",
    args: [{ graceMs: 86_400_000 }],
    activities: {
      sweepOrphanFiles: async (): ReturnType<FileSweepActivities["sweepOrphanFiles"]> => ({
        checked: 40,
        deleted: 3,
        tooRecent: 1,
      }),
    },
  },
  {
    workflowType: "keyExpiryNotices",
    workflowFile: "key-expiry-notices",
    name: "done",
    args: [],
    activities: {
      sendDueKeyNotices: async (): ReturnType<KeyNoticeActivities["sendDueKeyNotices"]> => ({
        mailed: 1,
        logged: 1,
        failed: 0,
      }),
    },
  },
  {
    workflowType: "refreshStatistics",
    workflowFile: "refresh-statistics",
    name: "done",
    args: [],
    activities: {
      refreshStatistics: async (): ReturnType<MaintenanceActivities["refreshStatistics"]> => ({
        analyzed: ["chunks", "memories"],
      }),
    },
  },
  {
    workflowType: "maintainTables",
    workflowFile: "maintain-tables",
    name: "done",
    args: [],
    activities: {
      maintainTables: async (): ReturnType<MaintenanceActivities["maintainTables"]> => ({
        vacuumed: ["chunks", "documents"],
        reindexed: ["chunks_hnsw_bge_small_en_v1_5"],
        compacted: [],
        deferred: [],
        steps: [
          { step: "vacuum", target: "chunks", ms: 1200 },
          { step: "vacuum", target: "documents", ms: 300 },
          { step: "reindex", target: "chunks_hnsw_bge_small_en_v1_5", ms: 9000 },
        ],
      }),
    },
  },
];

export const historyScenarios: HistoryScenario[] = [
  ...documentScenarios,
  ...syncScenarios,
  ...webhookScenarios,
  ...maintenanceScenarios,
];
