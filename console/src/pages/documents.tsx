import { useRef, useState } from "preact/hooks";
import {
  type DocumentJson,
  documentStatuses,
  formatBytes,
  formatDate,
  type Pagination,
  post,
  uploadFile,
} from "../api.ts";
import { ErrorNote, ListTable, PageTitle, Tags } from "../components.tsx";
import { Field, FieldCell, SelectField, SubmitRow } from "../forms.tsx";
import { messageOf, useLoad } from "../hooks.ts";
import { linkProps } from "../router.ts";
import { NameAndStatus } from "./document.tsx";

export function DocumentsPage() {
  const [tag, setTag] = useState("");
  const [status, setStatus] = useState("");
  const [limit, setLimit] = useState(20);
  const [page, setPage] = useState(1);
  const [applied, setApplied] = useState({ tag: "", status: "" });

  const list = useLoad(
    () =>
      post<{ memories: DocumentJson[]; pagination: Pagination }>("/v3/documents/list", {
        page,
        limit,
        ...(applied.tag ? { containerTags: [applied.tag] } : {}),
        ...(applied.status ? { statuses: [applied.status] } : {}),
      }),
    [page, limit, applied.tag, applied.status],
    // While anything listed is still processing, keep the list fresh.
    (data) => (data?.memories.some((d) => d.status !== "done" && d.status !== "failed") ? 2000 : undefined),
  );
  const p = list.data?.pagination;

  return (
    <>
      <PageTitle>Documents</PageTitle>
      <Upload onUploaded={() => list.reload()} />
      <section aria-labelledby="doc-list">
        <h2 id="doc-list">All documents</h2>
        <form
          class="grid filters"
          onSubmit={(e) => {
            e.preventDefault();
            setPage(1);
            setApplied({ tag: tag.trim(), status });
          }}
        >
          <Field id="filter-tag" label="Container tag" value={tag} onValue={setTag} />
          <SelectField
            id="filter-status"
            label="Status"
            value={status}
            onValue={setStatus}
            options={[{ value: "", text: "any" }, ...documentStatuses]}
          />
          <SelectField
            id="page-size"
            label="Per page"
            value={String(limit)}
            onValue={(v) => {
              setLimit(Number(v));
              setPage(1);
            }}
            options={["10", "20", "50", "100"]}
          />
          <SubmitRow>Apply filters</SubmitRow>
        </form>
        <ErrorNote error={list.error} />
        <ListTable
          label="Documents"
          columns={["Document", "Status", "Type", "Container tags", "Size", "Added"]}
          rows={list.data?.memories}
          empty="No documents match."
          row={(d) => (
            <tr key={d.id} data-document-id={d.id}>
              <NameAndStatus doc={d} />
              <td>{d.type}</td>
              <td>
                <Tags tags={d.containerTags} />
              </td>
              <td>{formatBytes(d.fileSize)}</td>
              <td>{formatDate(d.createdAt)}</td>
            </tr>
          )}
        />
        {p && p.totalItems > 0 ? (
          <nav class="pager" aria-label="Pages of documents">
            <button type="button" class="secondary" disabled={page <= 1} onClick={() => setPage(page - 1)}>
              Previous page
            </button>
            <span>
              Page {p.currentPage} of {Math.max(1, p.totalPages)} ({p.totalItems} documents)
            </span>
            <button
              type="button"
              class="secondary"
              disabled={page >= p.totalPages}
              onClick={() => setPage(page + 1)}
            >
              Next page
            </button>
          </nav>
        ) : null}
      </section>
    </>
  );
}

function Upload({ onUploaded }: { onUploaded: () => void }) {
  const fileRef = useRef<HTMLInputElement>(null);
  const [tag, setTag] = useState("");
  const [progress, setProgress] = useState<{ sent: number; total: number } | null>(null);
  const [error, setError] = useState<string>();
  const [done, setDone] = useState<{ id: string; name: string } | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    const file = fileRef.current?.files?.[0];
    if (!file) {
      setError("Choose a file first.");
      return;
    }
    const form = new FormData();
    form.append("file", file);
    if (tag.trim()) form.append("containerTag", tag.trim());
    setBusy(true);
    setError(undefined);
    setDone(null);
    setProgress({ sent: 0, total: file.size });
    try {
      const result = await uploadFile(form, (sent, total) => setProgress({ sent, total }));
      setProgress({ sent: file.size, total: file.size });
      setDone({ id: result.id, name: file.name });
      if (fileRef.current) fileRef.current.value = "";
      onUploaded();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  const percent = progress ? Math.round((progress.sent / Math.max(1, progress.total)) * 100) : 0;
  return (
    <section aria-labelledby="upload">
      <h2 id="upload">Upload a file</h2>
      <form class="grid" onSubmit={submit}>
        <FieldCell id="upload-file" label="File">
          <input id="upload-file" type="file" ref={fileRef} required />
        </FieldCell>
        <Field id="upload-tag" label="Container tag" value={tag} onValue={setTag} />
        <SubmitRow busy={busy}>Upload</SubmitRow>
      </form>
      {progress ? (
        <div class="progress">
          <label for="upload-progress">Upload progress</label>
          <progress id="upload-progress" max={100} value={percent}>
            {percent}%
          </progress>
          <span aria-hidden="true">{percent}%</span>
        </div>
      ) : null}
      <ErrorNote error={error} />
      <p role="status" class="note ok" hidden={!done}>
        {done ? (
          <>
            Uploaded {done.name}.{" "}
            <a {...linkProps(`documents/${encodeURIComponent(done.id)}`)} id="uploaded-link">
              Follow its processing
            </a>
          </>
        ) : null}
      </p>
    </section>
  );
}
