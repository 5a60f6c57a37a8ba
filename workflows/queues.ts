/**
 * Heavy extraction (OCR, transcription) runs on its own task queue, `<queue>-heavy`, so minutes-long
 * jobs cannot take every activity slot while small documents wait; each queue has its own concurrency.
 */
export const HEAVY_QUEUE_SUFFIX = "-heavy";

export const heavyQueueOf = (taskQueue: string) => `${taskQueue}${HEAVY_QUEUE_SUFFIX}`;
