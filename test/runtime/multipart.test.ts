import { mkdtempSync, openAsBlob, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { buffer } from "node:stream/consumers";
import { afterAll, describe, expect, it } from "vitest";
import { encodeMultipart } from "../../cli/multipart.ts";

describe("the CLI's multipart encoder", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "multipart-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("declares the exact length and encodes what a standard parser reads back, odd names included", async () => {
    const file = path.join(dir, "notes.bin");
    const content = Buffer.concat([Buffer.from("héllo\r\n--not-a-boundary\r\n"), Buffer.alloc(70_000, 7)]);
    writeFileSync(file, content);
    const form = new FormData();
    form.append("file", await openAsBlob(file), 'Café "quoted"\nname.txt');
    form.append("containerTag", "tag_1");
    form.append("filepath", "sub/ü/notes.bin");

    const encoded = encodeMultipart(form);
    const bytes = await buffer(encoded.body);
    expect(bytes.length).toBe(encoded.length);

    // The service reads uploads with the platform's own parser (Request.formData), as here.
    const parsed = await new Response(bytes, { headers: { "content-type": encoded.contentType } }).formData();
    expect(parsed.get("containerTag")).toBe("tag_1");
    expect(parsed.get("filepath")).toBe("sub/ü/notes.bin");
    const uploaded = parsed.get("file") as File;
    // Quotes and line breaks in a name go percent-encoded, as browsers send them, and come back whole.
    expect(bytes.toString("utf8")).toContain('filename="Café %22quoted%22%0Aname.txt"');
    expect(uploaded.name).toBe('Café "quoted"\nname.txt');
    expect(Buffer.from(await uploaded.arrayBuffer()).equals(content)).toBe(true);
  });
});
