import {
  type ConsoleConfig,
  type DocumentJson,
  formatDate,
  formatDuration,
  get,
  workflowUrl,
} from "../api.ts";
import { Empty, ErrorNote, PageTitle, TableWrap } from "../components.tsx";
import { useLoad } from "../hooks.ts";
import { latestRun, NameAndStatus } from "./document.tsx";

export function ProcessingPage({ config }: { config: ConsoleConfig | null }) {
  const list = useLoad(
    async () => {
      // Each listed document carries its status history, hence its run and stage times.
      const { documents, totalCount } = await get<{ documents: DocumentJson[]; totalCount: number }>(
        "/v3/documents/processing",
      );
      return { documents, totalCount, at: new Date().toISOString() };
    },
    [],
    2000,
  );

  return (
    <>
      <PageTitle>Processing</PageTitle>
      <p>
        Documents whose processing has not finished, refreshed every 2 seconds.{" "}
        {list.data ? <span class="muted">Last refreshed {formatDate(list.data.at)}.</span> : null}
      </p>
      <ErrorNote error={list.error} />
      <div aria-live="polite">
        {list.data && !list.data.documents.length ? <Empty>Nothing is processing right now.</Empty> : null}
        {list.data?.documents.length ? (
          <p>
            {list.data.totalCount} document{list.data.totalCount === 1 ? "" : "s"} in processing.
          </p>
        ) : null}
      </div>
      {list.data?.documents.length ? (
        <TableWrap
          label="Documents in processing"
          columns={["Document", "Stage", "In this stage for", "Added", "Workflow"]}
        >
          {list.data.documents.map((d) => {
            const run = latestRun(d);
            const since = d.statusHistory?.at(-1)?.at;
            const url = d.statusHistory ? workflowUrl(config, d.id, run) : null;
            return (
              <tr key={d.id}>
                <NameAndStatus doc={d} />
                <td>{since ? formatDuration(Date.now() - Date.parse(since)) : "—"}</td>
                <td>{formatDate(d.createdAt)}</td>
                <td>
                  {url ? (
                    <a href={url} target="_blank" rel="noreferrer">
                      doc/{d.id}/{run}
                    </a>
                  ) : (
                    <code>{d.statusHistory ? `doc/${d.id}/${run}` : "—"}</code>
                  )}
                </td>
              </tr>
            );
          })}
        </TableWrap>
      ) : null}
    </>
  );
}
