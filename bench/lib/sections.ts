// Replace one `## ` section of a markdown file, keeping everything else as it is.

/**
 * `markdown` with the section that starts at the line `heading` (up to the next `## ` heading or the
 * end) replaced by `section`; appended at the end when the file has no such section.
 */
export function replaceSection(markdown: string, heading: string, section: string): string {
  const body = `${section.replace(/\s+$/, "")}\n`;
  const lines = markdown.split("\n");
  const start = lines.findIndex((l) => l.trimEnd() === heading);
  if (start === -1) {
    const base = markdown.replace(/\s+$/, "");
    return base ? `${base}\n\n${body}` : body;
  }
  let end = lines.findIndex((l, i) => i > start && /^## /.test(l));
  if (end === -1) end = lines.length;
  const before = lines.slice(0, start).join("\n");
  const after = lines.slice(end).join("\n");
  return `${before}${before ? "\n" : ""}${body}${after ? `\n${after}` : ""}`;
}

/** The section starting at `heading` (up to the next `## ` heading), or undefined. */
export function findSection(markdown: string, heading: string): string | undefined {
  const lines = markdown.split("\n");
  const start = lines.findIndex((l) => l.trimEnd() === heading);
  if (start === -1) return undefined;
  let end = lines.findIndex((l, i) => i > start && /^## /.test(l));
  if (end === -1) end = lines.length;
  return lines.slice(start, end).join("\n");
}
