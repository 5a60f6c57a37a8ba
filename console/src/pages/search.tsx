import { useState } from "preact/hooks";
import { formatDate, post } from "../api.ts";
import { Empty, ErrorNote, Highlight, PageTitle } from "../components.tsx";
import { Check, CheckField, Field, SelectField, SubmitRow } from "../forms.tsx";
import { useAction } from "../hooks.ts";
import { linkProps } from "../router.ts";

interface DocResult {
  documentId: string;
  title: string | null;
  type: string | null;
  score: number;
  containerTags: string[];
  createdAt: string;
  chunks: { content: string; isRelevant: boolean; score: number }[];
}

interface MemoryResult {
  id: string;
  memory?: string;
  chunk?: string;
  similarity: number;
  version?: number | null;
  updatedAt: string;
  isForgotten?: boolean;
}

type Results =
  | { kind: "documents"; q: string; results: DocResult[]; timing: number; warnings?: string[] }
  | { kind: "memories"; q: string; results: MemoryResult[]; timing: number; warnings?: string[] };

const KINDS = [
  ["documents", "Documents"],
  ["memories", "Memories"],
] as const;

export function SearchPage() {
  const [q, setQ] = useState("");
  const [kind, setKind] = useState<"documents" | "memories">("documents");
  const [tag, setTag] = useState("");
  const [limit, setLimit] = useState("10");
  const [threshold, setThreshold] = useState("0");
  const [rerank, setRerank] = useState(false);
  const [results, setResults] = useState<Results | null>(null);
  const action = useAction();

  const submit = async (e: Event) => {
    e.preventDefault();
    const common = {
      q,
      limit: Number(limit),
      ...(tag.trim() ? { containerTags: [tag.trim()] } : {}),
      ...(rerank ? { rerank: true } : {}),
    };
    const found =
      kind === "documents"
        ? await action.run(async () => ({
            kind: "documents" as const,
            q,
            ...(await post<Omit<Extract<Results, { kind: "documents" }>, "kind" | "q">>("/v3/search", {
              ...common,
              documentThreshold: Number(threshold),
            })),
          }))
        : await action.run(async () => ({
            kind: "memories" as const,
            q,
            ...(await post<Omit<Extract<Results, { kind: "memories" }>, "kind" | "q">>("/v4/search", {
              ...common,
              threshold: Number(threshold),
            })),
          }));
    if (found) setResults(found);
  };

  return (
    <>
      <PageTitle>Search</PageTitle>
      <form class="grid" aria-label="Search" onSubmit={submit}>
        <Field id="q" label="Search for" value={q} onValue={setQ} wide type="search" required />
        <fieldset>
          <legend>Search in</legend>
          {KINDS.map(([value, text]) => (
            <Check
              key={value}
              label={text}
              type="radio"
              name="kind"
              value={value}
              checked={kind === value}
              onChange={() => setKind(value)}
            />
          ))}
        </fieldset>
        <Field id="search-tag" label="Container tag" value={tag} onValue={setTag} />
        <SelectField
          id="search-limit"
          label="Results"
          value={limit}
          onValue={setLimit}
          options={["5", "10", "20", "50"]}
        />
        <Field
          id="search-threshold"
          label="Minimum score (0–1)"
          value={threshold}
          onValue={setThreshold}
          type="number"
          min={0}
          max={1}
          step={0.05}
        />
        <CheckField label="Rerank" checked={rerank} onChecked={setRerank} />
        <SubmitRow busy={action.busy}>Search</SubmitRow>
      </form>
      <ErrorNote error={action.error} />
      <section aria-labelledby="results" aria-live="polite">
        <h2 id="results">Results</h2>
        {results ? (
          <p class="muted">
            {results.results.length} result{results.results.length === 1 ? "" : "s"} in{" "}
            {Math.round(results.timing)} ms
            {results.warnings?.length ? ` — ${results.warnings.join("; ")}` : ""}
          </p>
        ) : null}
        {results && !results.results.length ? <Empty>Nothing found.</Empty> : null}
        {results?.kind === "documents" ? (
          <ol class="results">
            {results.results.map((r) => (
              <li key={r.documentId}>
                <a {...linkProps(`documents/${encodeURIComponent(r.documentId)}`)}>
                  {r.title || r.documentId}
                </a>{" "}
                <span class="muted small">
                  score {r.score.toFixed(3)} · {r.type ?? ""} · {formatDate(r.createdAt)}
                </span>
                {r.chunks
                  .filter((c) => c.isRelevant)
                  .map((c) => (
                    <blockquote key={c.content.slice(0, 40)}>
                      <Highlight text={c.content} query={results.q} />
                    </blockquote>
                  ))}
              </li>
            ))}
          </ol>
        ) : null}
        {results?.kind === "memories" ? (
          <ol class="results">
            {results.results.map((r) => (
              <li key={r.id}>
                <p>{r.memory ?? r.chunk}</p>
                <span class="muted small">
                  similarity {r.similarity.toFixed(3)}
                  {r.version ? ` · version ${r.version}` : ""} · {formatDate(r.updatedAt)}
                </span>
              </li>
            ))}
          </ol>
        ) : null}
      </section>
    </>
  );
}
