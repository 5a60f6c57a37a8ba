// A photo, a music clip or a scan that OCR cannot read has no text, yet the user who uploaded it wants it
// kept and findable. Such a file (one that decoded fine: corrupt files still fail) becomes a short text of
// what is known about it: its name, kind, size, and what its metadata says (when and with what a photo was
// taken, where, how long a clip is). That text is chunked and embedded like any other.

import type { ContentType, ScalarMetadata } from "./types.ts";

/** Kinds whose files may decode fine and still hold no text. */
export const DESCRIBED_WHEN_TEXTLESS: readonly ContentType[] = ["image", "audio", "video", "pdf"];

/** Put on the document's metadata of a file kept by its description. */
export const TEXTLESS_NOTE = "no text found in the file; kept with what is known about it";

const KIND: Partial<Record<ContentType, string>> = {
  image: "Image",
  audio: "Audio",
  video: "Video",
  pdf: "PDF document",
};
const MISSING: Partial<Record<ContentType, string>> = {
  image: "no text could be read in it",
  audio: "no speech could be heard in it",
  video: "no speech or text could be found in it",
  pdf: "no text could be read in it",
};

const str = (metadata: ScalarMetadata, key: string) => {
  const v = metadata[key];
  return typeof v === "string" && v.trim() ? v.trim() : undefined;
};
const num = (metadata: ScalarMetadata, key: string) => {
  const v = metadata[key];
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
};

function duration(seconds: number): string {
  if (seconds < 60) return `${Math.round(seconds * 10) / 10} s`;
  const m = Math.floor(seconds / 60);
  const s = Math.round(seconds % 60);
  return m < 60 ? `${m} min ${s} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** The text a text-less file is kept by, from its name and the metadata its extractor found. */
export function describeTextless(
  type: ContentType,
  filename: string | undefined,
  metadata: ScalarMetadata,
): string {
  const facts: string[] = [];
  const format = str(metadata, "format") ?? str(metadata, "container");
  const width = num(metadata, "width");
  const height = num(metadata, "height");
  if (format) facts.push(format.toUpperCase());
  if (width && height) facts.push(`${width} × ${height} pixels`);
  const seconds = num(metadata, "durationSeconds");
  if (seconds) facts.push(duration(seconds));
  const pages = num(metadata, "pages");
  if (pages) facts.push(`${pages} page${pages === 1 ? "" : "s"}`);
  const name = filename ? ` "${filename}"` : "";
  const sentences = [
    `${KIND[type] ?? "File"}${name}${facts.length ? ` (${facts.join(", ")})` : ""}: ${MISSING[type] ?? "no text found"}.`,
  ];
  const taken = str(metadata, "takenAt");
  if (taken) sentences.push(`${type === "image" ? "Taken" : "Recorded"} on ${taken}.`);
  const camera = str(metadata, "camera");
  if (camera) sentences.push(`Camera: ${camera}.`);
  const latitude = num(metadata, "latitude");
  const longitude = num(metadata, "longitude");
  if (latitude !== undefined && longitude !== undefined)
    sentences.push(`Place: latitude ${latitude}, longitude ${longitude}.`);
  for (const [key, label] of [
    ["title", "Title"],
    ["author", "Author"],
    ["artist", "Artist"],
    ["album", "Album"],
  ] as const) {
    const value = str(metadata, key);
    if (value) sentences.push(`${label}: ${value}.`);
  }
  return sentences.join(" ");
}
