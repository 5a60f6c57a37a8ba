-- Rate-limit rows were never deleted: one row per API key and, for the authentication throttles, per client
-- address, so traffic from many addresses grew the table for good. Each row now keeps when its window ends, and
-- table maintenance deletes the rows whose window has ended (store/rate-limits.ts pruneRateLimits).
-- A row written before this knows only its window's start: it is kept a day past it, the longest window any
-- counter uses (AUTH_FAILURE_WINDOW_MS at most), so no window still running is cut short.
ALTER TABLE "rate_limits" ADD COLUMN "window_end" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
UPDATE "rate_limits" SET "window_end" = "window_start" + 86400000;
