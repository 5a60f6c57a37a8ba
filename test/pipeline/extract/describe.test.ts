import { describe, expect, it } from "vitest";
import { describeTextless } from "../../../pipeline/extract/describe.ts";

describe("what is known about a file without text", () => {
  it("describes a photo by its name, size and EXIF facts", () => {
    expect(
      describeTextless("image", "IMG_0042.jpg", {
        format: "jpeg",
        width: 4032,
        height: 3024,
        ocrConfidence: 0,
        camera: "Apple iPhone 12",
        takenAt: "2024-05-04 13:22:10",
        latitude: 38.722252,
        longitude: -9.139337,
      }),
    ).toBe(
      'Image "IMG_0042.jpg" (JPEG, 4032 × 3024 pixels): no text could be read in it. ' +
        "Taken on 2024-05-04 13:22:10. Camera: Apple iPhone 12. Place: latitude 38.722252, longitude -9.139337.",
    );
  });

  it("describes a clip by its length and tags, and a file without a name by its kind", () => {
    expect(
      describeTextless("audio", "theme.mp3", {
        container: "mp3",
        durationSeconds: 125.4,
        artist: "John Williams",
      }),
    ).toBe('Audio "theme.mp3" (MP3, 2 min 5 s): no speech could be heard in it. Artist: John Williams.');
    expect(describeTextless("pdf", undefined, { pages: 3 })).toBe(
      "PDF document (3 pages): no text could be read in it.",
    );
    expect(describeTextless("video", "clip.webm", { container: "matroska,webm", durationSeconds: 4 })).toBe(
      'Video "clip.webm" (MATROSKA,WEBM, 4 s): no speech or text could be found in it.',
    );
  });
});
