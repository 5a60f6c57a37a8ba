import { useState } from "preact/hooks";
import { type ApiKey, del, formatDate, get, type KeyNotice, post, splitTags } from "../api.ts";
import { ErrorNote, ListTable, OkNote, PageTitle, StatusBadge, Tags } from "../components.tsx";
import { Field, SelectField, SubmitRow } from "../forms.tsx";
import { useAction, useLoad } from "../hooks.ts";

interface CreatedKey extends Omit<ApiKey, "status" | "disabledAt" | "notices"> {
  key: string;
}

interface ConsoleUser {
  id: string;
  email: string;
  createdAt: string;
  disabledAt: string | null;
}

export function KeysPage() {
  const keys = useLoad(() => get<{ keys: ApiKey[] }>("/v3/auth/keys"), []);
  const notices = useLoad(() => get<{ notices: KeyNotice[] }>("/v3/auth/key-notices"), []);
  const [created, setCreated] = useState<CreatedKey | null>(null);
  const action = useAction();

  const disable = async (key: ApiKey) => {
    if (!window.confirm(`Disable the key “${key.name}”? Requests with it will be refused at once.`)) return;
    await action.run(() => del(`/v3/auth/keys/${encodeURIComponent(key.id)}`), `Key “${key.name}” disabled.`);
    await keys.reload();
  };

  return (
    <>
      <PageTitle>API keys</PageTitle>
      <Notices notices={notices.data?.notices} error={notices.error} />
      {created ? (
        <SecretOnce created={created} onDone={() => setCreated(null)} />
      ) : (
        <CreateKey
          onCreated={(k) => {
            setCreated(k);
            void keys.reload();
          }}
        />
      )}
      <section aria-labelledby="keys-list">
        <h2 id="keys-list">Keys</h2>
        <ErrorNote error={keys.error ?? action.error} />
        <OkNote message={action.message} />
        {keys.loading && !keys.data ? <p aria-busy="true">Loading keys…</p> : null}
        <ListTable
          label="API keys"
          columns={[
            "Name",
            "Prefix",
            "Kind",
            "Container tags",
            "Status",
            "Expires",
            "Rate limit",
            "Notices sent",
          ]}
          actions
          rows={keys.data?.keys}
          empty="No keys yet."
          row={(k) => (
            <tr key={k.id} data-key-id={k.id}>
              <td>{k.name}</td>
              <td>
                <code>{k.keyPrefix}…</code>
              </td>
              <td>{k.kind}</td>
              <td>
                <Tags tags={k.containerTags} />
              </td>
              <td>
                <StatusBadge status={k.status} />
              </td>
              <td>{k.expiresAt ? formatDate(k.expiresAt) : "never"}</td>
              <td>
                {k.rateLimitMax ? `${k.rateLimitMax} / ${(k.rateLimitTimeWindow ?? 60_000) / 1000} s` : "—"}
              </td>
              <td>{k.notices?.length ? k.notices.map((n) => n.leadTime).join(", ") : "—"}</td>
              <td>
                {k.fromEnvironment ? (
                  <span class="muted">set by MEMORY_ADMIN_KEY</span>
                ) : k.status === "active" ? (
                  <button
                    type="button"
                    class="danger"
                    disabled={action.busy}
                    onClick={() => disable(k)}
                    aria-label={`Disable key ${k.name}`}
                  >
                    Disable
                  </button>
                ) : null}
              </td>
            </tr>
          )}
        />
      </section>
      <ConsoleUsers />
    </>
  );
}

function Notices({ notices, error }: { notices?: KeyNotice[]; error?: string }) {
  if (error) return <ErrorNote error={`Key-expiry notices: ${error}`} />;
  if (!notices?.length) return null;
  return (
    <section aria-labelledby="notices" class="panel warn">
      <h2 id="notices">Key-expiry notices</h2>
      <ul>
        {notices.map((n) => (
          <li key={`${n.keyId}-${n.leadTime}-${n.sentAt}`}>
            <strong>{n.keyName}</strong> expires {formatDate(n.expiresAt)} — {n.leadTime} notice{" "}
            {n.channel === "smtp"
              ? `mailed to ${n.recipient ?? "its contact"}`
              : `written to the log${n.recipient ? ` (for ${n.recipient})` : ""}`}{" "}
            on {formatDate(n.sentAt)}
          </li>
        ))}
      </ul>
    </section>
  );
}

function SecretOnce({ created, onDone }: { created: CreatedKey; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  return (
    <section aria-labelledby="new-secret" class="panel secret" role="alert">
      <h2 id="new-secret">Key “{created.name}” created</h2>
      <p>Copy the secret now: it is shown only this once and cannot be retrieved later.</p>
      <label for="secret">Secret</label>
      <div class="row">
        <input
          id="secret"
          readOnly
          value={created.key}
          class="mono"
          onFocus={(e) => e.currentTarget.select()}
        />
        <button
          type="button"
          class="secondary"
          onClick={async () => {
            try {
              await navigator.clipboard.writeText(created.key);
              setCopied(true);
            } catch {
              setCopied(false);
            }
          }}
        >
          Copy
        </button>
      </div>
      <p role="status">{copied ? "Copied to the clipboard." : ""}</p>
      <button type="button" onClick={onDone}>
        I have saved it
      </button>
    </section>
  );
}

function CreateKey({ onCreated }: { onCreated: (k: CreatedKey) => void }) {
  const [name, setName] = useState("");
  const [kind, setKind] = useState<"scoped" | "admin">("scoped");
  const [tags, setTags] = useState("");
  const [days, setDays] = useState("");
  const [email, setEmail] = useState("");
  const [max, setMax] = useState("");
  const [windowSeconds, setWindowSeconds] = useState("60");
  const action = useAction();

  const submit = async (e: Event) => {
    e.preventDefault();
    const body: Record<string, unknown> = { kind };
    if (name.trim()) body.name = name.trim();
    if (kind === "scoped") body.containerTags = splitTags(tags);
    if (days) body.expiresInDays = Number(days);
    if (email.trim()) body.contactEmail = email.trim();
    if (max) {
      body.rateLimitMax = Number(max);
      body.rateLimitTimeWindow = Number(windowSeconds || "60") * 1000;
    }
    const created = await action.run(() => post<CreatedKey>("/v3/auth/keys", body));
    if (created) {
      setName("");
      setTags("");
      onCreated(created);
    }
  };

  return (
    <section aria-labelledby="create-key">
      <h2 id="create-key">Create a key</h2>
      <form class="grid" onSubmit={submit}>
        <Field id="key-name" label="Name" value={name} onValue={setName} />
        <SelectField
          id="key-kind"
          label="Kind"
          value={kind}
          onValue={(v) => setKind(v as "scoped" | "admin")}
          options={["scoped", "admin"]}
          hint="Scoped: only its container tags. Admin: everything."
        />
        <Field
          id="key-tags"
          label="Container tags (comma-separated)"
          value={tags}
          onValue={setTags}
          disabled={kind === "admin"}
          required={kind === "scoped"}
        />
        <Field
          id="key-days"
          label="Expires in (days, empty = default)"
          value={days}
          onValue={setDays}
          type="number"
          min={1}
          max={3650}
          inputMode="numeric"
        />
        <Field
          id="key-email"
          label="Contact email for expiry notices"
          value={email}
          onValue={setEmail}
          type="email"
        />
        <Field
          id="key-max"
          label="Rate limit (requests per window, empty = default)"
          value={max}
          onValue={setMax}
          type="number"
          min={1}
          inputMode="numeric"
        />
        <Field
          id="key-window"
          label="Rate-limit window (seconds)"
          value={windowSeconds}
          onValue={setWindowSeconds}
          type="number"
          min={1}
          max={3600}
          inputMode="numeric"
        />
        <SubmitRow busy={action.busy}>Create key</SubmitRow>
      </form>
      <ErrorNote error={action.error} />
    </section>
  );
}

function ConsoleUsers() {
  const list = useLoad(() => get<{ users: ConsoleUser[] }>("/v3/console/users"), []);
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const action = useAction();

  const create = async (e: Event) => {
    e.preventDefault();
    const user = await action.run(
      () => post<ConsoleUser>("/v3/console/users", { email, password }),
      `Console user ${email} created.`,
    );
    if (user) {
      setEmail("");
      setPassword("");
      await list.reload();
    }
  };

  const disable = async (u: ConsoleUser) => {
    if (!window.confirm(`Disable the console user ${u.email}?`)) return;
    await action.run(() => del(`/v3/console/users/${encodeURIComponent(u.id)}`), `${u.email} disabled.`);
    await list.reload();
  };

  return (
    <section aria-labelledby="console-users">
      <h2 id="console-users">Console users</h2>
      <form class="grid" onSubmit={create}>
        <Field
          id="user-email"
          label="Email"
          value={email}
          onValue={setEmail}
          type="email"
          required
          autoComplete="off"
        />
        <Field
          id="user-password"
          label="Password (at least 12 characters)"
          value={password}
          onValue={setPassword}
          type="password"
          required
          minLength={12}
          autoComplete="new-password"
        />
        <SubmitRow busy={action.busy}>Create user</SubmitRow>
      </form>
      <ErrorNote error={list.error ?? action.error} />
      <OkNote message={action.message} />
      <ListTable
        label="Console users"
        columns={["Email", "Created", "Status"]}
        actions
        rows={list.data?.users ?? []}
        empty="No console users yet."
        row={(u) => (
          <tr key={u.id}>
            <td>{u.email}</td>
            <td>{formatDate(u.createdAt)}</td>
            <td>
              <StatusBadge status={u.disabledAt ? "disabled" : "active"} />
            </td>
            <td>
              {u.disabledAt ? null : (
                <button
                  type="button"
                  class="danger"
                  onClick={() => disable(u)}
                  aria-label={`Disable ${u.email}`}
                >
                  Disable
                </button>
              )}
            </td>
          </tr>
        )}
      />
    </section>
  );
}
