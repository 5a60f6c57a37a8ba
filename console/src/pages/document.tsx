import { useState } from "preact/hooks";
import {
  type ConsoleConfig,
  type DocumentJson,
  del,
  docName,
  formatBytes,
  formatDate,
  formatDuration,
  get,
  post,
  terminal,
  workflowUrl,
} from "../api.ts";
import { Empty, ErrorNote, OkNote, PageTitle, StatusBadge, Tags } from "../components.tsx";
import { useAction, useLoad } from "../hooks.ts";
import { linkProps, navigate } from "../router.ts";

interface Chunk {
  id: string;
  position: number;
  content: string;
  metadata: Record<string, string | number>;
  embeddingModel: string | null;
}

const CONTENT_PREVIEW = 5000;
const CHUNK_PREVIEW = 10;

/** The stages of one run with how long each took (until the next stage, or until now). */
export function stagesOf(doc: DocumentJson, run?: number) {
  const history = doc.statusHistory ?? [];
  const latest = run ?? history.at(-1)?.run ?? 1;
  const entries = history.filter((h) => h.run === latest);
  return entries.map((h, i) => {
    const next = entries[i + 1];
    const end = next ? Date.parse(next.at) : terminal(h.status) ? undefined : Date.now();
    return { ...h, ms: end === undefined ? undefined : end - Date.parse(h.at) };
  });
}

export function latestRun(doc: DocumentJson): number {
  return doc.statusHistory?.at(-1)?.run ?? 1;
}

/** The first cells of a row in a list of documents. */
export function NameAndStatus({ doc }: { doc: DocumentJson }) {
  return (
    <>
      <td>
        <a {...linkProps(`documents/${encodeURIComponent(doc.id)}`)}>{docName(doc)}</a>
      </td>
      <td>
        <StatusBadge status={doc.status} />
      </td>
    </>
  );
}

export function DocumentPage({ id, config }: { id: string; config: ConsoleConfig | null }) {
  const doc = useLoad(
    () => get<DocumentJson>(`/v3/documents/${encodeURIComponent(id)}`),
    [id],
    (d) => (d && !terminal(d.status) ? 2000 : undefined),
  );
  const chunks = useLoad(
    () => get<{ chunks: Chunk[] }>(`/v3/documents/${encodeURIComponent(id)}/chunks`),
    [id, doc.data?.status],
  );
  const [showAll, setShowAll] = useState(false);
  const [allChunks, setAllChunks] = useState(false);
  const action = useAction();
  const d = doc.data;

  const reprocess = async () => {
    await action.run(
      () => post(`/v3/documents/${encodeURIComponent(id)}/reprocess`),
      "Queued for processing again.",
    );
    await doc.reload();
  };
  const remove = async () => {
    if (!d || !window.confirm(`Delete “${docName(d)}” permanently?`)) return;
    let deleted = false;
    await action.run(async () => {
      await del(`/v3/documents/${encodeURIComponent(id)}`);
      deleted = true;
    });
    if (deleted) navigate("documents");
  };

  if (!d) {
    return (
      <>
        <PageTitle>Document</PageTitle>
        <ErrorNote error={doc.error} />
        {!doc.error ? <p aria-busy="true">Loading…</p> : null}
      </>
    );
  }
  const run = latestRun(d);
  const wf = workflowUrl(config, d.id, run);
  const content = d.content ?? "";
  return (
    <>
      <p>
        <a {...linkProps("documents")}>← All documents</a>
      </p>
      <PageTitle
        actions={
          <>
            <button type="button" class="secondary" disabled={action.busy} onClick={reprocess}>
              Reprocess
            </button>
            <button type="button" class="danger" disabled={action.busy} onClick={remove}>
              Delete
            </button>
          </>
        }
      >
        {docName(d)}
      </PageTitle>
      <ErrorNote error={action.error ?? doc.error} />
      <OkNote message={action.message} />
      <dl class="facts">
        <dt>Status</dt>
        <dd>
          <StatusBadge status={d.status} /> <span class="muted">(run {run})</span>
        </dd>
        <dt>Id</dt>
        <dd>
          <code>{d.id}</code>
        </dd>
        {d.customId ? (
          <>
            <dt>Custom id</dt>
            <dd>{d.customId}</dd>
          </>
        ) : null}
        <dt>Type</dt>
        <dd>
          {d.type}
          {d.mimeType ? ` (${d.mimeType})` : ""}
        </dd>
        {d.fileName ? (
          <>
            <dt>File</dt>
            <dd>
              {d.fileName}, {formatBytes(d.fileSize)}
            </dd>
          </>
        ) : null}
        {d.url ? (
          <>
            <dt>URL</dt>
            <dd>{d.url}</dd>
          </>
        ) : null}
        <dt>Container tags</dt>
        <dd>
          <Tags tags={d.containerTags} />
        </dd>
        <dt>Added</dt>
        <dd>{formatDate(d.createdAt)}</dd>
        <dt>Updated</dt>
        <dd>{formatDate(d.updatedAt)}</dd>
        <dt>Embedding model</dt>
        <dd>{d.embeddingModel ?? "—"}</dd>
        <dt>Workflow</dt>
        <dd>
          {wf ? (
            <a href={wf} target="_blank" rel="noreferrer">
              doc/{d.id}/{run} in Temporal UI
            </a>
          ) : (
            <code>
              doc/{d.id}/{run}
            </code>
          )}
        </dd>
      </dl>
      {d.errorReason ? (
        <section aria-labelledby="error-reason" class="panel error">
          <h2 id="error-reason">Why it failed</h2>
          <p>{d.errorReason}</p>
        </section>
      ) : null}
      <section aria-labelledby="stages">
        <h2 id="stages">Processing stages</h2>
        <ol class="stages">
          {stagesOf(d).map((s) => (
            <li key={`${s.run}-${s.status}-${s.at}`}>
              <StatusBadge status={s.status} /> <time dateTime={s.at}>{formatDate(s.at)}</time>
              {s.ms !== undefined ? <span class="muted"> — {formatDuration(s.ms)}</span> : null}
            </li>
          ))}
        </ol>
        {d.memoryExtraction ? (
          <p>
            Memory extraction: {d.memoryExtraction.status}, {d.memoryExtraction.memories} memories
            {d.memoryExtraction.reason ? ` (${d.memoryExtraction.reason})` : ""}.
          </p>
        ) : null}
      </section>
      {d.summary ? (
        <section aria-labelledby="summary">
          <h2 id="summary">Summary</h2>
          <p>{d.summary}</p>
        </section>
      ) : null}
      <section aria-labelledby="content">
        <h2 id="content">Content</h2>
        {content ? (
          <>
            {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard */}
            <pre class="content" tabIndex={0}>
              {showAll ? content : content.slice(0, CONTENT_PREVIEW)}
            </pre>
            {content.length > CONTENT_PREVIEW ? (
              <button type="button" class="secondary" onClick={() => setShowAll(!showAll)}>
                {showAll ? "Show less" : `Show all ${content.length} characters`}
              </button>
            ) : null}
          </>
        ) : (
          <Empty>No text yet{terminal(d.status) ? "" : " (still processing)"}.</Empty>
        )}
      </section>
      <section aria-labelledby="chunks">
        <h2 id="chunks">Chunks {chunks.data ? `(${chunks.data.chunks.length})` : ""}</h2>
        <ErrorNote error={chunks.error} />
        {chunks.data && !chunks.data.chunks.length ? <Empty>No chunks.</Empty> : null}
        <ol class="chunks">
          {chunks.data?.chunks.slice(0, allChunks ? undefined : CHUNK_PREVIEW).map((c) => (
            <li key={c.id}>
              <div class="muted small">
                #{c.position + 1}
                {Object.entries(c.metadata)
                  .map(([k, v]) => ` · ${k}: ${v}`)
                  .join("")}
              </div>
              <p>{c.content}</p>
            </li>
          ))}
        </ol>
        {chunks.data && chunks.data.chunks.length > CHUNK_PREVIEW ? (
          <button type="button" class="secondary" onClick={() => setAllChunks(!allChunks)}>
            {allChunks
              ? `Show the first ${CHUNK_PREVIEW} chunks`
              : `Show all ${chunks.data.chunks.length} chunks`}
          </button>
        ) : null}
      </section>
    </>
  );
}
