// What a photo's EXIF block says about when, with what and where it was taken, as document metadata.
// exif-reader parses the block sharp hands over; a damaged block only loses these facts, never the image.

import exifReader from "exif-reader";
import type { ScalarMetadata } from "./types.ts";

const text = (value: unknown) =>
  typeof value === "string" && value.replace(/\0/g, "").trim() ? value.replace(/\0/g, "").trim() : undefined;

/** EXIF dates carry no zone: exif-reader reads them as UTC, so the UTC fields give back the camera's clock. */
function cameraTime(value: unknown): string | undefined {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) return undefined;
  return value.toISOString().slice(0, 19).replace("T", " ");
}

/** Degrees, minutes, seconds and N/S/E/W to signed decimal degrees (6 places: about 10 cm). */
function degrees(dms: unknown, ref: unknown): number | undefined {
  if (!Array.isArray(dms) || dms.length < 1 || !dms.every((n) => typeof n === "number" && Number.isFinite(n)))
    return undefined;
  const [d = 0, m = 0, s = 0] = dms as number[];
  const value = d + m / 60 + s / 3600;
  const sign = ref === "S" || ref === "W" ? -1 : 1;
  return Math.round(sign * value * 1e6) / 1e6;
}

export function exifFacts(block: Buffer): ScalarMetadata {
  let parsed: ReturnType<typeof exifReader>;
  try {
    parsed = exifReader(block);
  } catch {
    return {};
  }
  const facts: ScalarMetadata = {};
  const make = text(parsed.Image?.Make);
  const model = text(parsed.Image?.Model);
  // Models often repeat the make ("Canon" + "Canon PowerShot S40").
  const camera =
    model && make && !model.toLowerCase().startsWith(make.toLowerCase())
      ? `${make} ${model}`
      : (model ?? make);
  if (camera) facts.camera = camera;
  const taken = cameraTime(parsed.Photo?.DateTimeOriginal) ?? cameraTime(parsed.Image?.DateTime);
  if (taken) facts.takenAt = taken;
  const gps = parsed.GPSInfo;
  const latitude = degrees(gps?.GPSLatitude, gps?.GPSLatitudeRef);
  const longitude = degrees(gps?.GPSLongitude, gps?.GPSLongitudeRef);
  if (latitude !== undefined && longitude !== undefined) {
    facts.latitude = latitude;
    facts.longitude = longitude;
  }
  return facts;
}
