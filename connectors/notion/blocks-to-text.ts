// Notion content as Markdown-like text: rich text with its annotations and links, blocks by type (headings,
// lists with nesting, to-dos, quotes, callouts, code, toggles, tables, media captions), and database row
// properties as `Name: value` lines. Pure functions over what the API returned, so they test on their own.

import type { BlockObjectResponse, RichTextItemResponse } from "@notionhq/client";

/** A block with its children, as fetched (children stay empty for blocks whose content is not inlined). */
export interface BlockNode {
  block: BlockObjectResponse;
  children: BlockNode[];
}

/** Plain text of rich text: what a person reads, no markup. */
export function plainText(items: readonly RichTextItemResponse[] | undefined): string {
  return (items ?? []).map((item) => item.plain_text).join("");
}

/** Rich text as Markdown: bold, italic, strikethrough, inline code, links and inline equations. */
export function richTextToMarkdown(items: readonly RichTextItemResponse[] | undefined): string {
  let out = "";
  for (const item of items ?? []) {
    if (item.type === "equation") {
      out += `$${item.equation.expression}$`;
      continue;
    }
    const text = item.plain_text;
    // Markers must hug the text: `** bold**` is not bold in Markdown, so spaces stay outside.
    const match = text.match(/^(\s*)([\s\S]*?)(\s*)$/);
    const [lead, core, trail] = match ? [match[1] ?? "", match[2] ?? "", match[3] ?? ""] : ["", text, ""];
    if (!core) {
      out += text;
      continue;
    }
    const a = item.annotations;
    let styled = core;
    if (a.code) styled = `\`${styled}\``;
    else {
      if (a.bold) styled = `**${styled}**`;
      if (a.italic) styled = `_${styled}_`;
      if (a.strikethrough) styled = `~~${styled}~~`;
    }
    const href = item.href;
    if (href && /^(https?:|mailto:)/i.test(href)) styled = `[${styled}](${href})`;
    out += lead + styled + trail;
  }
  return out;
}

/** Blocks that join the list before them when it is of the same kind (to-dos are bullets with a box). */
const LIST_KINDS: Record<string, "bullet" | "ordered"> = {
  bulleted_list_item: "bullet",
  to_do: "bullet",
  numbered_list_item: "ordered",
};

/**
 * Blocks as Markdown-like text. Consecutive list items of one kind form a tight list; other blocks are separated
 * by a blank line. Children of list items, to-dos and toggles are indented under their parent; children
 * of quotes and callouts stay inside the quote; those of columns, synced blocks and toggleable headings
 * follow at the same level.
 */
export function blocksToMarkdown(nodes: readonly BlockNode[]): string {
  const parts: { text: string; list?: "bullet" | "ordered" }[] = [];
  let number = 0;
  for (const node of nodes) {
    const { block } = node;
    if (block.type === "numbered_list_item") {
      const start = block.numbered_list_item.list_start_index;
      number = number === 0 && typeof start === "number" ? start : number + 1;
    } else number = 0;
    const text = renderBlock(node, number);
    if (text.trim() === "") continue;
    parts.push({ text, list: LIST_KINDS[block.type] });
  }
  let out = "";
  parts.forEach((part, i) => {
    if (i > 0) out += part.list && part.list === parts[i - 1]?.list ? "\n" : "\n\n";
    out += part.text;
  });
  return out;
}

function indent(text: string, prefix: string): string {
  return text
    .split("\n")
    .map((line) => (line ? prefix + line : line))
    .join("\n");
}

function quoted(text: string): string {
  return text
    .split("\n")
    .map((line) => (line ? `> ${line}` : ">"))
    .join("\n");
}

/** A line with nested content under it, indented to line up with the text after the marker. */
function withNested(line: string, children: readonly BlockNode[], width: number): string {
  const nested = blocksToMarkdown(children);
  return nested ? `${line}\n${indent(nested, " ".repeat(width))}` : line;
}

/** Text that may hold line breaks, continued under a list marker. */
function hanging(marker: string, text: string): string {
  return marker + text.split("\n").join(`\n${" ".repeat(marker.length)}`);
}

function then(head: string, children: readonly BlockNode[]): string {
  const rest = blocksToMarkdown(children);
  if (!head) return rest;
  return rest ? `${head}\n\n${rest}` : head;
}

function caption(items: readonly RichTextItemResponse[] | undefined): string {
  return richTextToMarkdown(items).trim();
}

function renderBlock(node: BlockNode, number: number): string {
  const { block, children } = node;
  switch (block.type) {
    case "paragraph":
      return then(richTextToMarkdown(block.paragraph.rich_text), children);
    case "heading_1":
      return then(heading(1, block.heading_1.rich_text), children);
    case "heading_2":
      return then(heading(2, block.heading_2.rich_text), children);
    case "heading_3":
      return then(heading(3, block.heading_3.rich_text), children);
    case "heading_4":
      return then(heading(4, block.heading_4.rich_text), children);
    case "bulleted_list_item": {
      const marker = "- ";
      return withNested(
        hanging(marker, richTextToMarkdown(block.bulleted_list_item.rich_text)),
        children,
        marker.length,
      );
    }
    case "numbered_list_item": {
      const marker = `${number}. `;
      return withNested(
        hanging(marker, richTextToMarkdown(block.numbered_list_item.rich_text)),
        children,
        marker.length,
      );
    }
    case "to_do": {
      const marker = block.to_do.checked ? "- [x] " : "- [ ] ";
      return withNested(hanging(marker, richTextToMarkdown(block.to_do.rich_text)), children, 2);
    }
    case "toggle":
      return withNested(hanging("▸ ", richTextToMarkdown(block.toggle.rich_text)), children, 2);
    case "quote":
      return quoted(then(richTextToMarkdown(block.quote.rich_text), children));
    case "callout": {
      const icon = block.callout.icon?.type === "emoji" ? `${block.callout.icon.emoji} ` : "";
      const text = richTextToMarkdown(block.callout.rich_text);
      return quoted(then(text ? icon + text : icon.trim(), children));
    }
    case "code": {
      const language = block.code.language === "plain text" ? "" : block.code.language;
      const body = plainText(block.code.rich_text);
      const fence = body.includes("```") ? "````" : "```";
      const code = `${fence}${language}\n${body}\n${fence}`;
      const note = caption(block.code.caption);
      return note ? `${code}\n${note}` : code;
    }
    case "equation":
      return `$$\n${block.equation.expression}\n$$`;
    case "divider":
      return "---";
    case "table":
      return table(children, block.table.has_column_header);
    case "column_list":
    case "column":
    case "synced_block":
    case "tab":
      return blocksToMarkdown(children);
    case "template":
      return then(richTextToMarkdown(block.template.rich_text), children);
    case "meeting_notes":
    case "transcription": {
      const data = block.type === "meeting_notes" ? block.meeting_notes : block.transcription;
      return then(data.title?.length ? heading(3, data.title) : "", children);
    }
    case "child_page":
      // Sub-pages are documents of their own; the parent only names them.
      return block.child_page.title ? `Page: ${block.child_page.title}` : "";
    case "child_database":
      return block.child_database.title ? `Database: ${block.child_database.title}` : "";
    case "bookmark":
    case "embed": {
      const data = block.type === "bookmark" ? block.bookmark : block.embed;
      return link(caption(data.caption), data.url);
    }
    case "link_preview":
      return link("", block.link_preview.url);
    case "image":
    case "video":
    case "pdf":
    case "audio":
    case "file": {
      const media =
        block.type === "image"
          ? block.image
          : block.type === "video"
            ? block.video
            : block.type === "pdf"
              ? block.pdf
              : block.type === "audio"
                ? block.audio
                : block.file;
      const label =
        caption(media.caption) || ("name" in media && typeof media.name === "string" ? media.name : "");
      // Files hosted by Notion have signed URLs that expire within the hour: only external links are kept.
      if (media.type === "external") return link(label, media.external.url);
      return label;
    }
    case "table_row":
      return tableRow(block.table_row.cells);
    case "breadcrumb":
    case "table_of_contents":
    case "link_to_page":
    case "unsupported":
      return "";
    default:
      return unknownBlock(node);
  }
}

/** Types newer than this code: their rich text if they have any, then their children. */
function unknownBlock(node: BlockNode): string {
  const block = node.block as unknown as Record<string, unknown> & { type: string };
  const data = block[block.type] as { rich_text?: RichTextItemResponse[] } | undefined;
  const text = Array.isArray(data?.rich_text) ? richTextToMarkdown(data.rich_text) : "";
  return then(text, node.children);
}

function heading(level: number, items: readonly RichTextItemResponse[]): string {
  const text = richTextToMarkdown(items)
    .replace(/\s*\n\s*/g, " ")
    .trim();
  return text ? `${"#".repeat(level)} ${text}` : "";
}

function link(label: string, url: string): string {
  if (!url) return label;
  return label ? `[${label}](${url})` : url;
}

function cell(items: readonly RichTextItemResponse[]): string {
  return richTextToMarkdown(items)
    .replace(/\|/g, "\\|")
    .replace(/\s*\n\s*/g, " ")
    .trim();
}

function tableRow(cells: readonly (readonly RichTextItemResponse[])[]): string {
  return `| ${cells.map(cell).join(" | ")} |`;
}

/** A Markdown table; Markdown needs a header row, so without a column header the first row serves. */
function table(rows: readonly BlockNode[], hasHeader: boolean): string {
  const lines: string[] = [];
  let width = 0;
  for (const row of rows) {
    if (row.block.type !== "table_row") continue;
    width = Math.max(width, row.block.table_row.cells.length);
    lines.push(tableRow(row.block.table_row.cells));
  }
  if (!lines.length) return "";
  const separator = `|${" --- |".repeat(Math.max(width, 1))}`;
  if (!hasHeader) lines.unshift(`|${"  |".repeat(Math.max(width, 1))}`);
  lines.splice(1, 0, separator);
  return lines.join("\n");
}

/** A page's title: its `title` property's plain text. */
export function pageTitle(properties: Record<string, unknown>): string {
  for (const value of Object.values(properties)) {
    const v = value as { type?: string; title?: RichTextItemResponse[] };
    if (v?.type === "title") return plainText(v.title).trim();
  }
  return "";
}

/** Row properties besides the title as `Name: value` lines; empty and machine-only values are left out. */
export function propertiesToText(properties: Record<string, unknown>): string {
  const lines: string[] = [];
  for (const [name, value] of Object.entries(properties)) {
    const text = propertyValue(value as Record<string, unknown>);
    if (text) lines.push(`${name}: ${text}`);
  }
  return lines.join("\n");
}

function propertyValue(v: Record<string, unknown> | null | undefined): string {
  if (!v || typeof v.type !== "string") return "";
  const data = v[v.type];
  const named = (x: unknown) => ((x as { name?: unknown } | null)?.name as string | undefined) ?? "";
  switch (v.type) {
    case "title":
      return "";
    case "rich_text":
      return plainText(data as RichTextItemResponse[]).trim();
    case "number":
      return typeof data === "number" ? String(data) : "";
    case "select":
    case "status":
      return named(data);
    case "multi_select":
      return Array.isArray(data) ? data.map(named).filter(Boolean).join(", ") : "";
    case "date": {
      const d = data as { start?: string; end?: string | null } | null;
      if (!d?.start) return "";
      return d.end ? `${d.start} → ${d.end}` : d.start;
    }
    case "checkbox":
      return data === true ? "Yes" : "No";
    case "url":
    case "email":
    case "phone_number":
      return typeof data === "string" ? data : "";
    case "people":
      return Array.isArray(data) ? data.map(named).filter(Boolean).join(", ") : "";
    case "files":
      return Array.isArray(data) ? data.map(named).filter(Boolean).join(", ") : "";
    case "unique_id": {
      const u = data as { prefix?: string | null; number?: number | null } | null;
      if (typeof u?.number !== "number") return "";
      return u.prefix ? `${u.prefix}-${u.number}` : String(u.number);
    }
    case "formula": {
      const f = data as Record<string, unknown> | null;
      if (!f || typeof f.type !== "string") return "";
      if (f.type === "string") return typeof f.string === "string" ? f.string : "";
      if (f.type === "boolean") return f.boolean === true ? "Yes" : f.boolean === false ? "No" : "";
      return propertyValue({ type: f.type, [f.type]: f[f.type] });
    }
    default:
      // Relations hold ids only; rollups, timestamps and people stamps add noise rather than text.
      return "";
  }
}
