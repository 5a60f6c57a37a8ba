/** Where results go: JSON for scripts (--json), aligned text for people. Progress and notes go to stderr. */
export interface Output {
  json: boolean;
  /** The result: one JSON document with --json, else the text `render` makes of it. */
  result(value: unknown, render: () => string): void;
  /** A remark for the person at the terminal; never mixed into stdout, so --json stays parseable. */
  note(text: string): void;
}

export function createOutput(json: boolean): Output {
  return {
    json,
    result(value, render) {
      process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${render()}\n`);
    },
    note(text) {
      process.stderr.write(`${text}\n`);
    },
  };
}

/** Columns padded to their widest cell; a cell longer than its column's `max` is cut with an ellipsis. */
export function table(
  headers: string[],
  rows: (string | number | null | undefined)[][],
  max: number | number[] = 60,
): string {
  const limit = (i: number) => (typeof max === "number" ? max : (max[i] ?? 60));
  const cells = [headers, ...rows.map((r) => r.map((c, i) => clip(c == null ? "" : String(c), limit(i))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  return cells
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/** One line of at most `max` characters: whitespace folded, cut with an ellipsis. */
export function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
