// Turns a web page into plain text for chunking: Readability picks the article, and a small DOM
// walker keeps the structure that matters for chunking (paragraphs, headings, list items as lines).

import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";

export interface HtmlText {
  title: string | null;
  text: string;
}

/** Never page text: code, styling, embedded media, form controls, hidden elements. */
const INVISIBLE =
  "script, style, noscript, template, svg, canvas, iframe, object, embed, select, textarea, button, [hidden], [aria-hidden='true']";
/** Navigation furniture, removed before Readability scores the page. (Not <form>: ASP.NET wraps whole pages in one.) */
const BOILERPLATE = "nav, aside, [role='navigation']";

/** Elements that end a paragraph (blank line after them). */
const PARAGRAPH = new Set([
  "p",
  "h1",
  "h2",
  "h3",
  "h4",
  "h5",
  "h6",
  "pre",
  "blockquote",
  "table",
  "dl",
  "figure",
  "hr",
  "section",
  "article",
  "header",
  "footer",
  "main",
  "address",
]);
/** Elements that start a new line but not a new paragraph. */
const LINE = new Set(["li", "tr", "dt", "dd", "div", "br", "figcaption", "caption", "option"]);
const CELL = new Set(["td", "th"]);
/** A top-level list is its own paragraph; a nested list just continues its parent's lines. */
const LIST = new Set(["ul", "ol"]);

/**
 * `html` must already be decoded to a string (the caller knows the charset). `_url` is accepted for
 * callers that have it, but the output carries no links, so it does not change the result.
 */
export function htmlToText(html: string, _url?: string): HtmlText {
  const document = parse(html);
  const documentTitle = clean(document.querySelector("title")?.textContent ?? "");
  for (const el of document.querySelectorAll(`${INVISIBLE}, ${BOILERPLATE}`)) el.remove();
  // Readability mutates the document it is given, so the fallback below parses a fresh copy.
  const article = new Readability(document as unknown as Document).parse();
  let text = article?.content ? blockText(parse(article.content).body as unknown as Node) : "";
  if (!text) text = bodyText(html);
  const title = pickTitle(clean(article?.title ?? ""), documentTitle) ?? firstHeading(html);
  return { title, text };
}

/**
 * Parses into a document whose <html> holds exactly <head> and <body>. linkedom does not repair
 * markup the way browsers do, and its `head`/`body` getters insert empty elements when the tree is
 * out of shape (a <script> before <head>, a <header> before <body>), which would hide the page from
 * Readability. So the real head and body are located and re-serialised into a clean shell.
 */
function parse(html: string) {
  const { document } = parseHTML(html);
  const root = document.documentElement;
  let head = "";
  let body = html; // a fragment or plain text: linkedom makes its first element the root
  if (root?.localName === "html") {
    head = root.querySelector("head")?.innerHTML ?? "";
    const bodyElement = root.querySelector("body");
    body = bodyElement
      ? bodyElement.innerHTML
      : Array.from(root.childNodes)
          .filter((n) => (n as Element).localName !== "head")
          .map((n) => (n.nodeType === 1 ? (n as Element).outerHTML : escapeText(n.textContent ?? "")))
          .join("");
  }
  return parseHTML(`<!doctype html><html><head>${head}</head><body>${body}</body></html>`).document;
}

function escapeText(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/**
 * Last resort when Readability finds no article (e.g. a page whose only text sits in a <footer>):
 * every visible piece of text in the body. Navigation is kept because it may be all the page has.
 */
function bodyText(html: string): string {
  const document = parse(html);
  for (const el of document.querySelectorAll(INVISIBLE)) el.remove();
  return blockText(document.body as unknown as Node);
}

function firstHeading(html: string): string | null {
  const document = parse(html);
  const heading = clean(document.querySelector("h1, h2")?.textContent ?? "");
  return heading || null;
}

/**
 * Readability prefers og:title, which many sites set to the site name ("Institute for the Study of
 * War") while <title> is "Article | Site". If the chosen title is just one segment of <title>, the
 * remaining segments are the article's own title.
 */
function pickTitle(articleTitle: string, documentTitle: string): string | null {
  const parts = documentTitle.split(/\s+[|–—·]\s+|\s+-\s+/).map((p) => p.trim());
  if (articleTitle && parts.length > 1 && parts.includes(articleTitle)) {
    return parts.filter((p) => p !== articleTitle).join(" - ");
  }
  return articleTitle || documentTitle || null;
}

function clean(s: string): string {
  return s.replace(/\s+/g, " ").trim();
}

/**
 * Serialises a subtree as text: paragraphs separated by blank lines, line-level blocks on their own
 * lines, table cells joined with " | ", whitespace collapsed except inside <pre>.
 */
function blockText(root: Node): string {
  const out: string[] = [];
  let pendingBreak = 0; // 0 none, 1 newline, 2 blank line; applied before the next visible text
  let lineHasText = false;

  const requestBreak = (level: number) => {
    if (out.length > 0) pendingBreak = Math.max(pendingBreak, level);
  };
  const write = (piece: string) => {
    if (!piece) return;
    if (pendingBreak > 0) {
      out.push(pendingBreak === 2 ? "\n\n" : "\n");
      pendingBreak = 0;
      lineHasText = false;
    }
    out.push(piece);
    lineHasText = true;
  };
  const writeInline = (raw: string) => {
    let s = raw.replace(/\s+/g, " ");
    const last = out[out.length - 1] ?? "";
    // Drop a leading space at the start of a line or after an existing space.
    if ((!lineHasText || pendingBreak > 0 || last.endsWith(" ")) && s.startsWith(" ")) s = s.slice(1);
    write(s);
  };

  const walk = (node: Node, inPre: boolean, inList: boolean) => {
    if (node.nodeType === 3) {
      const value = node.nodeValue ?? "";
      if (inPre) {
        for (const [i, line] of value.split("\n").entries()) {
          if (i > 0) requestBreak(1);
          write(line.replace(/\s+$/, ""));
        }
      } else writeInline(value);
      return;
    }
    if (node.nodeType !== 1) return;
    const tag = (node as Element).localName.toLowerCase();
    if (tag === "br") {
      requestBreak(1);
      return;
    }
    const isList = LIST.has(tag);
    const level = PARAGRAPH.has(tag) || (isList && !inList) ? 2 : LINE.has(tag) || isList ? 1 : 0;
    if (level) requestBreak(level);
    if (CELL.has(tag) && lineHasText && pendingBreak === 0 && out[out.length - 1] !== " | ") {
      const last = out.length - 1;
      out[last] = (out[last] ?? "").replace(/ $/, ""); // "cell  | next" would keep the cell's trailing space
      write(" | ");
    }
    for (const child of Array.from(node.childNodes)) {
      walk(child, inPre || tag === "pre", inList || isList || tag === "li");
    }
    if (level) requestBreak(level);
  };

  walk(root, false, false);
  return out
    .join("")
    .split("\n")
    .map((line) => line.replace(/[ \t]+$/, ""))
    .join("\n")
    .replace(/ \|$/gm, "") // a row whose last cells were empty
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}
