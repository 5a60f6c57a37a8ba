import { readFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { exifFacts } from "../../../pipeline/extract/exif.ts";
import { FIXTURES_DIR } from "../../support/fixtures.ts";

const exifOf = async (bytes: Buffer) => (await sharp(bytes).metadata()).exif as Buffer;

describe("a photo's EXIF facts", () => {
  it("reads the camera and when the picture was taken (the camera's clock, no zone)", async () => {
    const photo = readFileSync(join(FIXTURES_DIR, "image", "example.jpg"));
    expect(exifFacts(await exifOf(photo))).toEqual({
      camera: "Canon PowerShot S40",
      takenAt: "2003-12-14 12:01:44",
    });
  });

  it("reads where it was taken as signed decimal degrees, and the make once when the model lacks it", async () => {
    const photo = await sharp({ create: { width: 8, height: 8, channels: 3, background: "#888" } })
      .jpeg()
      .withExif({
        IFD0: { Make: "Apple", Model: "iPhone 12" },
        IFD3: {
          GPSLatitudeRef: "N",
          GPSLatitude: "38/1 43/1 2028/100",
          GPSLongitudeRef: "W",
          GPSLongitude: "9/1 8/1 2161/100",
        },
      })
      .toBuffer();
    expect(exifFacts(await exifOf(photo))).toEqual({
      camera: "Apple iPhone 12",
      latitude: 38.7223,
      longitude: -9.139336,
    });
  });

  it("loses only these facts when the block is damaged", () => {
    expect(exifFacts(Buffer.from("Exif\0\0not a tiff header at all"))).toEqual({});
  });
});
