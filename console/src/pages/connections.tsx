import { useState } from "preact/hooks";
import {
  type Connection,
  type ConsoleConfig,
  del,
  formatDate,
  get,
  post,
  type SyncRun,
  splitTags,
  temporalWorkflowUrl,
} from "../api.ts";
import { ErrorNote, ListTable, OkNote, PageTitle, StatusBadge, Tags } from "../components.tsx";
import { Field, SelectField, SubmitRow, TextAreaField } from "../forms.tsx";
import { useAction, useLoad } from "../hooks.ts";

const PROVIDERS = ["s3", "web-crawler", "imap", "github", "google-drive", "onedrive", "gmail", "notion"];
/** Drive connections choose what they sync in the hosted picker. */
const PICKER = new Set(["google-drive", "onedrive"]);

export function ConnectionsPage({ config }: { config: ConsoleConfig | null }) {
  // Runs started here or by the schedule show up as they go: faster while one is running.
  const list = useLoad(
    () => post<Connection[]>("/v3/connections/list", {}),
    [],
    (data) => (data?.some((c) => c.lastSync?.status === "running" || c.status === "pending") ? 2000 : 10_000),
  );
  const action = useAction();
  const [handoff, setHandoff] = useState<{ provider: string; url: string } | null>(null);
  const [showRuns, setShowRuns] = useState<Connection | null>(null);

  const syncNow = async (c: Connection) => {
    await action.run(
      () => post<{ message: string }>(`/v3/connections/${encodeURIComponent(c.id)}/sync`),
      `Sync of ${c.provider} started.`,
    );
    await list.reload();
  };
  const picker = async (c: Connection) => {
    const link = await action.run(() =>
      post<{ pickerUrl: string }>(`/v3/connections/${encodeURIComponent(c.id)}/picker-link`),
    );
    if (link) {
      setHandoff({ provider: c.provider, url: link.pickerUrl });
      window.open(link.pickerUrl, "_blank", "noopener");
    }
  };
  const remove = async (c: Connection) => {
    if (!window.confirm(`Delete the ${c.provider} connection and the documents it imported?`)) return;
    await action.run(() => del(`/v3/connections/${encodeURIComponent(c.id)}`), "Connection deleted.");
    await list.reload();
  };

  return (
    <>
      <PageTitle>Connections</PageTitle>
      <CreateConnection
        onCreated={(provider, url) => {
          if (url) setHandoff({ provider, url });
          void list.reload();
        }}
      />
      {handoff ? (
        <section class="panel" aria-labelledby="handoff">
          <h2 id="handoff">Continue with {handoff.provider}</h2>
          <p>
            Finish in the provider's page (opened in a new tab). If it did not open:{" "}
            <a href={handoff.url} target="_blank" rel="noopener noreferrer">
              open the {handoff.provider} page
            </a>
            . Come back and refresh this list when done.
          </p>
          <button type="button" class="secondary" onClick={() => list.reload()}>
            Refresh list
          </button>
        </section>
      ) : null}
      <section aria-labelledby="conn-list">
        <h2 id="conn-list">Connections</h2>
        <ErrorNote error={list.error ?? action.error} />
        <OkNote message={action.message} />
        <ListTable
          label="Connections"
          columns={["Provider", "Status", "Container tags", "Every", "Last run"]}
          actions
          rows={list.data}
          empty="No connections yet."
          row={(c) => (
            <tr key={c.id}>
              <td>
                {c.provider}
                {c.email ? <div class="muted small">{c.email}</div> : null}
                <div class="muted small">
                  <code>{c.id}</code>
                </div>
              </td>
              <td>
                <StatusBadge status={c.status} />
              </td>
              <td>
                <Tags tags={c.containerTags} />
              </td>
              <td>{c.syncIntervalMinutes ? `${c.syncIntervalMinutes} min` : "manual"}</td>
              <td>
                {c.lastSync ? (
                  <>
                    <StatusBadge status={c.lastSync.status} />{" "}
                    {formatDate(c.lastSync.finishedAt ?? c.lastSync.startedAt)}
                    <div class="muted small">
                      <RunCounts run={c.lastSync} /> ({c.lastSync.trigger})
                    </div>
                    {c.lastSync.error ? <div class="small error-text">{c.lastSync.error}</div> : null}
                  </>
                ) : (
                  "never"
                )}
              </td>
              <td class="buttons">
                <button
                  type="button"
                  class="secondary"
                  aria-expanded={showRuns?.id === c.id}
                  aria-controls="conn-runs"
                  onClick={() => setShowRuns(showRuns?.id === c.id ? null : c)}
                >
                  Runs
                </button>
                <button type="button" class="secondary" disabled={action.busy} onClick={() => syncNow(c)}>
                  Sync now
                </button>
                {PICKER.has(c.provider) ? (
                  <button type="button" class="secondary" disabled={action.busy} onClick={() => picker(c)}>
                    Choose files
                  </button>
                ) : null}
                <button type="button" class="danger" disabled={action.busy} onClick={() => remove(c)}>
                  Delete
                </button>
              </td>
            </tr>
          )}
        />
      </section>
      {showRuns ? (
        <SyncRuns key={showRuns.id} connection={showRuns} config={config} onClose={() => setShowRuns(null)} />
      ) : null}
    </>
  );
}

function RunCounts({ run }: { run: SyncRun }) {
  const { added, updated, deleted, unchanged, failed, skipped, skippedReasons, heldForReview } = run.counts;
  const reasons = Object.entries(skippedReasons ?? {})
    .map(([reason, n]) => `${n} ${reason.replace(/_/g, " ")}`)
    .join(", ");
  return (
    <>
      {added} added, {updated} updated, {deleted} deleted, {unchanged} unchanged, {failed} failed
      {skipped ? `, ${skipped} skipped (${reasons})` : ""}
      {heldForReview ? `; ${heldForReview} missing at the source kept for review (not deleted)` : ""}
    </>
  );
}

/** The connection's recent runs, refreshed while one is running, each linked to its Temporal workflow. */
function SyncRuns({
  connection,
  config,
  onClose,
}: {
  connection: Connection;
  config: ConsoleConfig | null;
  onClose: () => void;
}) {
  const runs = useLoad(
    async () =>
      (await get<{ runs: SyncRun[] }>(`/v3/connections/${encodeURIComponent(connection.id)}/runs?limit=20`))
        .runs,
    [connection.id],
    (data) => (data?.some((r) => r.status === "running") ? 2000 : 10_000),
  );
  return (
    <section id="conn-runs" class="panel" aria-labelledby="conn-runs-title">
      <h2 id="conn-runs-title">
        Recent runs of {connection.provider} <code class="small">{connection.id}</code>
      </h2>
      <ErrorNote error={runs.error} />
      <ListTable
        label={`Sync runs of ${connection.provider}`}
        columns={["Started", "Finished", "Trigger", "Status", "Changes", "Workflow"]}
        rows={runs.data}
        empty="This connection has not synced yet."
        row={(r) => {
          const url = r.workflowId ? temporalWorkflowUrl(config, r.workflowId) : null;
          return (
            <tr key={r.id}>
              <td>{formatDate(r.startedAt)}</td>
              <td>{formatDate(r.finishedAt)}</td>
              <td>{r.trigger}</td>
              <td>
                <StatusBadge status={r.status} />
                {r.error ? <div class="small error-text">{r.error}</div> : null}
              </td>
              <td class="small">
                <RunCounts run={r} />
              </td>
              <td>
                {url ? (
                  <a href={url} target="_blank" rel="noreferrer">
                    {r.workflowId}
                  </a>
                ) : (
                  <code class="small">{r.workflowId ?? "—"}</code>
                )}
              </td>
            </tr>
          );
        }}
      />
      <button type="button" class="secondary" onClick={onClose}>
        Close
      </button>
    </section>
  );
}

function CreateConnection({ onCreated }: { onCreated: (provider: string, url?: string) => void }) {
  const [provider, setProvider] = useState("web-crawler");
  const [tags, setTags] = useState("");
  const [interval, setEvery] = useState("60");
  const [settings, setSettings] = useState("");
  const action = useAction();

  const submit = async (e: Event) => {
    e.preventDefault();
    let metadata: unknown;
    if (settings.trim()) {
      try {
        metadata = JSON.parse(settings);
      } catch {
        action.setError("Provider settings must be a JSON object.");
        return;
      }
    }
    const created = await action.run(
      () =>
        post<{ id: string; authLink: string; expiresIn: string }>(
          `/v3/connections/${encodeURIComponent(provider)}`,
          {
            containerTags: splitTags(tags),
            syncIntervalMinutes: Number(interval || "0"),
            redirectUrl: `${window.location.origin}/console/connections`,
            ...(metadata ? { metadata } : {}),
          },
        ),
      "Connection created.",
    );
    if (!created) return;
    // OAuth providers answer with their consent page; the others are ready at once.
    const needsHandoff = created.expiresIn !== "0" && /^https?:/.test(created.authLink);
    if (needsHandoff) window.open(created.authLink, "_blank", "noopener");
    onCreated(provider, needsHandoff ? created.authLink : undefined);
  };

  return (
    <section aria-labelledby="create-conn">
      <h2 id="create-conn">Connect a source</h2>
      <form class="grid" onSubmit={submit}>
        <SelectField
          id="conn-provider"
          label="Provider"
          value={provider}
          onValue={setProvider}
          options={PROVIDERS}
        />
        <Field id="conn-tags" label="Container tags (comma-separated)" value={tags} onValue={setTags} />
        <Field
          id="conn-interval"
          label="Sync every (minutes, 0 = manual)"
          value={interval}
          onValue={setEvery}
          type="number"
          min={0}
          inputMode="numeric"
        />
        <TextAreaField
          id="conn-settings"
          label="Provider settings (JSON: bucket, startUrls, host, credentials…)"
          value={settings}
          onValue={setSettings}
          wide
          rows={3}
          placeholder='{"startUrls": "https://example.com/"}'
        />
        <SubmitRow busy={action.busy}>Create connection</SubmitRow>
      </form>
      <ErrorNote error={action.error} />
      <OkNote message={action.message} />
    </section>
  );
}
