import type { ComponentChildren } from "preact";
import { useLayoutEffect, useRef } from "preact/hooks";

/** The page's heading takes focus when the page opens, so screen readers and keyboards start there. */
export function PageTitle({
  children,
  actions,
}: {
  children: ComponentChildren;
  actions?: ComponentChildren;
}) {
  const ref = useRef<HTMLHeadingElement>(null);
  // Before paint, so a keyboard user's next Tab already starts from the new page.
  useLayoutEffect(() => {
    ref.current?.focus();
  }, []);
  return (
    <div class="page-title">
      <h1 ref={ref} tabIndex={-1}>
        {children}
      </h1>
      {actions ? <div class="actions">{actions}</div> : null}
    </div>
  );
}

export function ErrorNote({ error }: { error?: string }) {
  if (!error) return null;
  return (
    <p class="note error" role="alert">
      {error}
    </p>
  );
}

export function OkNote({ message }: { message?: string }) {
  return (
    <p class="note ok" role="status" hidden={!message}>
      {message}
    </p>
  );
}

export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge badge-${status}`}>{status}</span>;
}

interface TableProps {
  label: string;
  columns: string[];
  /** A last column for the row's buttons, headed for screen readers only. */
  actions?: boolean;
}

export function TableWrap({
  label,
  columns,
  actions,
  children,
}: TableProps & { children: ComponentChildren }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard
    <section class="table-wrap" aria-label={label} tabIndex={0}>
      <table>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" key={c}>
                {c}
              </th>
            ))}
            {actions ? (
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            ) : null}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </section>
  );
}

/** Nothing until the rows have loaded, then `empty` if there are none. */
export function ListTable<T>({
  rows,
  empty,
  row,
  ...table
}: TableProps & { rows: T[] | undefined; empty: ComponentChildren; row: (item: T) => ComponentChildren }) {
  if (!rows) return null;
  if (!rows.length) return <Empty>{empty}</Empty>;
  return <TableWrap {...table}>{rows.map((item) => row(item))}</TableWrap>;
}

export function Tags({ tags }: { tags: string[] }) {
  if (!tags.length) return <span class="muted">none</span>;
  return (
    <span class="tags">
      {tags.map((t) => (
        <span class="tag" key={t}>
          {t}
        </span>
      ))}
    </span>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

/** Text with the words of a query marked (case-insensitive, words of 3+ characters). */
export function Highlight({ text, query }: { text: string; query: string }) {
  const words = [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) ?? [])];
  if (!words.length) return <>{text}</>;
  const pattern = new RegExp(
    `(${words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|")})`,
    "giu",
  );
  return (
    <>
      {text
        .split(pattern)
        .map((part, i) => (i % 2 === 1 ? <mark key={i}>{part}</mark> : <span key={i}>{part}</span>))}
    </>
  );
}
