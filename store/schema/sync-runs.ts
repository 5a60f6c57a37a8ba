import { index, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";
import type { SkipReason } from "../vocabulary.ts";
import { connections } from "./connections.ts";

export type SyncRunStatus = "running" | "done" | "failed" | "auth_expired" | "skipped";

export interface SyncCounts {
  added: number;
  updated: number;
  deleted: number;
  unchanged: number;
  failed: number;
  /** Items the source would not give (connectors/errors.ts ItemSkippedError), in all and by reason. */
  skipped?: number;
  skippedReasons?: Partial<Record<SkipReason, number>>;
  /** Documents a complete listing missed but that were kept, because so many went at once (a sync to review). */
  heldForReview?: number;
}

/** One sync of a connection: when, why, how it ended and what it changed. */
export const syncRuns = pgTable(
  "sync_runs",
  {
    id: text("id").primaryKey(),
    connectionId: text("connection_id")
      .notNull()
      .references(() => connections.id, { onDelete: "cascade" }),
    /** create | import | schedule */
    trigger: text("trigger").notNull(),
    status: text("status").$type<SyncRunStatus>().notNull().default("running"),
    errorCode: text("error_code"),
    error: text("error"),
    counts: jsonb("counts")
      .$type<SyncCounts>()
      .notNull()
      .default({ added: 0, updated: 0, deleted: 0, unchanged: 0, failed: 0 }),
    workflowId: text("workflow_id"),
    startedAt: timestamp("started_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    finishedAt: timestamp("finished_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [index("sync_runs_connection_idx").on(t.connectionId, t.startedAt)],
);

export type SyncRunRow = typeof syncRuns.$inferSelect;
