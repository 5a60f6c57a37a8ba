import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { type EmailExtractResult, extractEmail } from "../../../pipeline/extract/email.ts";
import { segmentsToText, UnprocessableContentError } from "../../../pipeline/extract/types.ts";
import { FIXTURES_DIR } from "../../support/fixtures.ts";

const DIR = `${FIXTURES_DIR}/email`;
const FIXTURES = readdirSync(DIR)
  .filter((f) => f.endsWith(".eml"))
  .sort();
const ctx = () => ({ heartbeat() {}, signal: new AbortController().signal });
const read = (name: string) => readFileSync(`${DIR}/${name}`);
const extract = (bytes: Buffer, filename = "test.eml") => extractEmail({ bytes, filename }, ctx());

/** Fixtures that are not e-mail at all: refused with this reason. */
const REFUSED: Record<string, string> = {
  "empty.eml": "the file is not an e-mail message: it has no headers and no body",
};

describe("extractEmail on every email fixture", () => {
  it.each(FIXTURES)("%s: a header segment, a body segment, and the subject as title", async (name) => {
    const refusal = REFUSED[name];
    if (refusal) {
      await expect(extract(read(name), name)).rejects.toThrow(new UnprocessableContentError(refusal));
      return;
    }
    const result = await extract(read(name), name);
    expect(result.type).toBe("email");
    const [headers, body, ...rest] = result.segments;
    expect(rest).toEqual([]);
    expect(headers?.source).toBe("headers");
    expect(headers?.text).toMatch(/^Subject: .+\nFrom: .+\nTo: .+/);
    expect(headers?.text.split("\n")[0]).toBe(`Subject: ${result.title}`);
    expect(body?.source).toBeUndefined();
    expect(body?.text.length).toBeGreaterThan(0);
    expect(body?.text).toBe(body?.text.trim());
    expect(body?.text).not.toMatch(/\r|\n{3,}/);
    expect(result.metadata.attachmentCount).toBe(result.attachments?.length);
    // The raw message's own Subject header, decoded, is the title.
    const rawSubject = read(name)
      .toString("latin1")
      .match(/^Subject: (.*)$/m)?.[1];
    expect(rawSubject).toBeDefined();
    if (!rawSubject?.includes("=?")) expect(result.title).toBe(rawSubject?.trim());
  });
});

/** What each fixture really says (read with `cat`). */
const EXPECTATIONS: Record<string, (r: EmailExtractResult, body: string) => void> = {
  "email-no-html-content-1.eml": (r, body) => {
    expect(r.title).toBe("[GitHub] Subscribed to 63 nf-core repositories");
    expect(r.metadata).toMatchObject({
      from: "GitHub <email@domain.com>",
      to: "email@domain.com",
      date: "2022-10-10T12:14:09.000Z",
      attachmentCount: 0,
    });
    // Quoted-printable: "you=E2=80=99ve=" + soft line break.
    expect(body).toContain(
      "Hey there, we’re just writing to let you know that you’ve automatically started watching several repositories on GitHub.",
    );
    expect(body).toContain("https://github.com/nf-core/rnaseq/subscription");
    expect(body).toContain(
      "You automatically watched these repositories because you’ve been given access to them.",
    );
  },
  "fake-email-attachment.eml": (r, body) => {
    expect(r.segments[0]?.text).toBe(
      [
        "Subject: Fake email with attachment",
        "From: Mallori Harrell <mallori@unstructured.io>",
        "To: Mallori Harrell <mallori@unstructured.io>",
        "Date: 2022-12-23T18:08:48.000Z",
        "Attachments: fake-attachment.txt",
      ].join("\n"),
    );
    expect(body).toContain("Here's the attachments!\n\nIt includes:\n\n   - Lots of whitespace");
    expect(r.attachments).toHaveLength(1);
    expect(r.attachments?.[0]).toMatchObject({
      filename: "fake-attachment.txt",
      contentType: "text/plain",
      inline: false,
    });
    expect(r.attachments?.[0]?.bytes.toString("utf8")).toBe("Hey this is a fake attachment!");
    expect(r.metadata.attachmentCount).toBe(1);
  },
  // "charset = "UTF-8"Content-Transfer-Encoding: 8bit" on one line: mailparser still reads the parts.
  "fake-email-malformed-encoding.eml": (r, body) => {
    expect(r.title).toBe("Test Email");
    expect(r.metadata.from).toBe("Matthew Robinson <mrobinson@unstructured.io>");
    expect(body).toBe(
      "This is a test email to use for unit tests.\n\nImportant points:\n\n   - Roses are red\n   - Violets are blue",
    );
  },
  "fake-email.eml": (r, body) => {
    expect(r.metadata).toMatchObject({
      from: "Matthew Robinson <mrobinson@unstructured.io>",
      to: "NotMatthew <NotMatthew@notunstructured.com>",
      date: "2022-12-16T22:04:16.000Z",
      messageId: "<CADc-_xaLB2FeVQ7mNsoX+NJb_7hAJhBKa_zet-rtgPGenj0uVw@mail.gmail.com>",
    });
    expect(body).toContain("Important points:");
    expect(body).toContain("- Violets are blue");
  },
  "family-day.eml": (r, body) => {
    expect(r.title).toBe("Family Day");
    expect(body).toContain("Get excited for our first annual family day!");
    expect(body).toContain("There will be face painting, a petting zoo, funnel cake and more.");
    expect(body).toContain("Mallori Harrell\nUnstructured Technologies\nData Scientist");
  },
  "mime-different-plain-html.eml": (_r, body) => {
    // The text/plain alternative is the body; the HTML one says different things and is not used.
    expect(body).toContain("This is the text/plain part.");
    expect(body).toContain("Did you know that the first email was sent by Ray Tomlinson in 1971?");
    expect(body).not.toContain("text/html");
    expect(body).not.toContain("networked email");
  },
  "mime-html-only.eml": (r, body) => {
    // No text part: the (base64, ISO-8859-1) HTML part goes through htmlToText.
    expect(r.title).toBe("Example HTML Only MIME Email");
    expect(body).toBe(
      [
        "This is a text/html part.",
        "The first emoticon, :) , was proposed by Scott Fahlman in 1982 to indicate just or sarcasm in text emails.",
        "Gmail was launched by Google in 2004 with 1 GB of free storage, significantly more than what other services offered at the time.",
      ].join("\n\n"),
    );
  },
  "mime-word-encoded-subject.eml": (r, body) => {
    expect(r.title).toBe("Simple email with ☸☿ Unicode subject");
    expect(body).toBe("This is a simple email message with Unicode characters in the subject.");
    expect(r.metadata.date).toBeUndefined(); // the message has no Date header
    expect(r.segments[0]?.text).not.toContain("Date:");
  },
};

describe("extractEmail fixture contents", () => {
  it.each(Object.keys(EXPECTATIONS))("%s", async (name) => {
    const result = await extract(read(name), name);
    EXPECTATIONS[name]?.(result, result.segments[1]?.text ?? "");
  });
});

const crlf = (lines: string[]) => Buffer.from(lines.join("\r\n"));

describe("extractEmail structure", () => {
  it("lists Cc, marks inline images, names unnamed attachments, and reads an HTML-only body", async () => {
    const bytes = crlf([
      "From: =?UTF-8?Q?Jos=C3=A9_Garc=C3=ADa?= <jose@example.com>",
      "To: Ann <ann@example.com>, bob@example.com",
      "Cc: Team: carol@example.com, dan@example.com;",
      "Subject: Plans",
      "Date: Mon, 3 Jun 2024 09:15:00 +0200",
      "MIME-Version: 1.0",
      'Content-Type: multipart/mixed; boundary="outer"',
      "",
      "--outer",
      'Content-Type: multipart/related; boundary="inner"',
      "",
      "--inner",
      "Content-Type: text/html; charset=utf-8",
      "",
      '<html><body><h1>Plan</h1><p>See the <b>logo</b> below.</p><img src="cid:logo@x"></body></html>',
      "--inner",
      "Content-Type: image/png",
      "Content-ID: <logo@x>",
      "Content-Disposition: inline",
      "Content-Transfer-Encoding: base64",
      "",
      "iVBORw0KGgo=",
      "--inner--",
      "--outer",
      "Content-Type: application/octet-stream",
      "Content-Disposition: attachment",
      "Content-Transfer-Encoding: base64",
      "",
      "AAECAw==",
      "--outer--",
      "",
    ]);
    const result = await extract(bytes);
    expect(result.segments[0]?.text).toBe(
      [
        "Subject: Plans",
        "From: José García <jose@example.com>",
        "To: Ann <ann@example.com>, bob@example.com",
        "Cc: Team: carol@example.com, dan@example.com",
        "Date: 2024-06-03T07:15:00.000Z",
        "Attachments: attachment-1, attachment-2",
      ].join("\n"),
    );
    expect(result.segments[1]?.text).toBe("Plan\n\nSee the logo below.");
    expect(result.attachments?.map((a) => [a.filename, a.contentType, a.inline, [...a.bytes]])).toEqual([
      ["attachment-1", "image/png", true, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]],
      ["attachment-2", "application/octet-stream", false, [0, 1, 2, 3]],
    ]);
    expect(result.metadata).toMatchObject({
      from: "José García <jose@example.com>",
      cc: "Team: carol@example.com, dan@example.com",
      attachmentCount: 2,
    });
    expect(segmentsToText(result.segments)).not.toMatch(/<(b|img|h1|p)\b/);
  });

  it("accepts a message with headers but no body, and refuses blank input", async () => {
    const result = await extract(
      crlf(["Subject: Lunch?", "From: a@example.com", "To: b@example.com", "", ""]),
    );
    expect(result.title).toBe("Lunch?");
    expect(result.segments).toEqual([
      { text: "Subject: Lunch?\nFrom: a@example.com\nTo: b@example.com", source: "headers" },
    ]);
    await expect(extract(Buffer.alloc(0))).rejects.toThrow(UnprocessableContentError);
    await expect(extract(Buffer.from("\r\n\r\n  \r\n"))).rejects.toThrow(UnprocessableContentError);
  });
});
