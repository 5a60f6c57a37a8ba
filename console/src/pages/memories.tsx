import { useState } from "preact/hooks";
import { formatDate, type Memory, post } from "../api.ts";
import { Empty, ErrorNote, PageTitle } from "../components.tsx";
import { CheckField, Field, SubmitRow } from "../forms.tsx";
import { useAction } from "../hooks.ts";
import { linkProps } from "../router.ts";

interface Profile {
  profile: { static: string[]; dynamic: string[] };
}

/** Every version of a memory, grouped under its first version, oldest version first. */
export function timelines(memories: Memory[]): Memory[][] {
  const groups = new Map<string, Memory[]>();
  for (const m of memories) {
    const root = m.rootId ?? m.id;
    groups.set(root, [...(groups.get(root) ?? []), m]);
  }
  return [...groups.values()]
    .map((g) => g.sort((a, b) => a.version - b.version || a.createdAt.localeCompare(b.createdAt)))
    .sort((a, b) => (b.at(-1)?.updatedAt ?? "").localeCompare(a.at(-1)?.updatedAt ?? ""));
}

const RELATION_TEXT: Record<string, string> = {
  updates: "updates (replaces)",
  extends: "extends (adds to)",
  derives: "derives (inferred from)",
};

export function MemoriesPage() {
  const [tag, setTag] = useState("");
  const [shown, setShown] = useState<{
    tag: string;
    profile: Profile;
    memories: Memory[];
    total: number;
  } | null>(null);
  const [forgotten, setForgotten] = useState(true);
  const action = useAction();

  const submit = async (e: Event) => {
    e.preventDefault();
    const containerTag = tag.trim();
    const loaded = await action.run(async () => {
      const [profile, list] = await Promise.all([
        post<Profile>("/v4/profile", { containerTag }),
        post<{ memories: Memory[]; pagination: { totalItems: number } }>("/v4/memories/list", {
          containerTag,
          includeHistory: true,
          includeForgotten: forgotten,
          limit: 500,
          sort: "updatedAt",
        }),
      ]);
      return { tag: containerTag, profile, memories: list.memories, total: list.pagination.totalItems };
    });
    if (loaded) setShown(loaded);
  };

  const groups = shown ? timelines(shown.memories) : [];
  const byId = new Map((shown?.memories ?? []).map((m) => [m.id, m]));
  return (
    <>
      <PageTitle>Memories</PageTitle>
      <form class="grid" onSubmit={submit}>
        <Field id="mem-tag" label="Container tag" value={tag} onValue={setTag} required />
        <CheckField label="Include forgotten memories" checked={forgotten} onChecked={setForgotten} />
        <SubmitRow busy={action.busy}>Show profile and memories</SubmitRow>
      </form>
      <ErrorNote error={action.error} />
      {shown ? (
        <>
          <section aria-labelledby="profile">
            <h2 id="profile">Profile of “{shown.tag}”</h2>
            <div class="two">
              <Facts title="Static facts" facts={shown.profile.profile.static} />
              <Facts title="Recent" facts={shown.profile.profile.dynamic} />
            </div>
          </section>
          <section aria-labelledby="timeline">
            <h2 id="timeline">Memories and their versions ({groups.length})</h2>
            {!groups.length ? <Empty>No memories in this container tag.</Empty> : null}
            {groups.map((versions) => (
              <article class="memory" key={versions[0]?.id} id={`mem-${versions[0]?.id}`}>
                <h3 class="visually-hidden">Memory {versions.at(-1)?.memory}</h3>
                <ol class="timeline">
                  {versions.map((m) => (
                    <li key={m.id} class={m.isLatest ? "latest" : "old"}>
                      <div class="when">
                        <span class="version">v{m.version}</span>{" "}
                        <time dateTime={m.createdAt}>{formatDate(m.createdAt)}</time>
                        {m.relation ? (
                          <span class={`relation rel-${m.relation}`}>
                            {RELATION_TEXT[m.relation] ?? m.relation}
                          </span>
                        ) : null}
                        {m.isLatest ? <span class="badge badge-done">latest</span> : null}
                        {m.isStatic ? <span class="badge">static</span> : null}
                        {m.isForgotten ? <span class="badge badge-failed">forgotten</span> : null}
                      </div>
                      <p>{m.memory}</p>
                      {m.relatedTo && m.relation !== "updates" ? (
                        <p class="small">
                          {m.relation} →{" "}
                          <a href={`#mem-${byId.get(m.relatedTo)?.rootId ?? m.relatedTo}`}>
                            “{byId.get(m.relatedTo)?.memory ?? m.relatedTo}”
                          </a>
                        </p>
                      ) : null}
                      {m.sourceDocumentId ? (
                        <a
                          class="small"
                          {...linkProps(`documents/${encodeURIComponent(m.sourceDocumentId)}`)}
                        >
                          source document
                        </a>
                      ) : null}
                    </li>
                  ))}
                </ol>
              </article>
            ))}
          </section>
        </>
      ) : null}
    </>
  );
}

function Facts({ title, facts }: { title: string; facts: string[] }) {
  return (
    <div>
      <h3>{title}</h3>
      {facts.length ? (
        <ul>
          {facts.map((s) => (
            <li key={s}>{s}</li>
          ))}
        </ul>
      ) : (
        <Empty>None.</Empty>
      )}
    </div>
  );
}
