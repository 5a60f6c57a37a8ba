// Runs inside worker threads (piscina): parsing and splitting are CPU-bound and must not block
// the event loop that serves the API and heartbeats activities.
import { chunkText } from "../pipeline/chunker.ts";
import { htmlToText } from "../pipeline/html.ts";

export type CpuTask =
  | { op: "html"; html: string; url?: string }
  | { op: "chunk"; text: string; maxChars: number; overlapSentences: number };

export default function run(task: CpuTask) {
  switch (task.op) {
    case "html":
      return htmlToText(task.html, task.url);
    case "chunk":
      return chunkText(task.text, { maxChars: task.maxChars, overlapSentences: task.overlapSentences });
  }
}
