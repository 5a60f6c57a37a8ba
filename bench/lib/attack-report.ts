// The "A load test with an attacker beside it" section of docs/benchmarks.md (bench/attack.ts measures it).
// The verdicts are computed from the figures against the issue's bounds: 0 client errors, p95 within 2× of the
// phase without the attacker, the service's RSS within 512 MiB of idle, every add present afterwards.

import type { AttackPhase, AttackResult } from "../attack.ts";
import { ATTACK_KIND_ABOUT, ATTACK_KINDS, CHUNKED_KINDS } from "./attacker.ts";
import { ms } from "./stats.ts";

export const ATTACK_HEADING = "## A load test with an attacker beside it";

/** The bounds the issue sets. */
export const ATTACK_BOUNDS = { p95Ratio: 2, rssRiseMiB: 512 } as const;

const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20).toLocaleString("en")} MiB`;
const signedMib = (bytes: number) => `${bytes < 0 ? "−" : "+"}${mib(Math.abs(bytes))}`;
const n = (v: number) => v.toLocaleString("en");
/** A lane's pace; 0 is unpaced (the next request as soon as an answer frees a slot). */
const perSecond = (rate: number) => (rate ? `${n(rate)} a second` : "as fast as the answers came");
const statuses = (by: Record<string, number>) =>
  Object.entries(by)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}: ${n(v)}`)
    .join(", ") || "—";

export function attackChecks(r: AttackResult) {
  const ratio = r.attack.latency.p95 / r.baseline.latency.p95;
  const rise = Math.max(r.baseline.rssPeakBytes, r.attack.rssPeakBytes) - r.rssIdleBytes;
  const missing = r.documents.reduce((s, d) => s + d.missing, 0);
  return {
    ratio,
    rise,
    missing,
    errors: r.baseline.errors + r.attack.errors,
    p95Holds: Number.isFinite(ratio) && ratio <= ATTACK_BOUNDS.p95Ratio,
    rssHolds: rise <= ATTACK_BOUNDS.rssRiseMiB * 2 ** 20,
    nothingLost: missing === 0,
    keysAnswer: r.afterFlood.every((a) => a.status !== undefined && a.status >= 200 && a.status < 300),
  };
}

function phaseRow(p: AttackPhase, idle: number): string {
  return `| ${p.name === "baseline" ? "clients alone" : "clients + attacker"} | ${n(p.requests)} | ${n(p.errors)}${p.errors ? ` (${statuses(p.errorsBy)})` : ""} | ${ms(p.latency.p50)} | ${ms(p.latency.p95)} | ${n(p.adds)} | ${mib(p.rssPeakBytes)} (${signedMib(p.rssPeakBytes - idle)}) |`;
}

export function renderAttackSection(r: AttackResult): string[] {
  const o = r.options;
  const c = attackChecks(r);
  const yes = (ok: boolean) => (ok ? "holds" : "**does not hold**");
  const routes = ["POST /v3/search", "POST /v4/search", "POST /v3/documents"] as const;
  const chunkedMiB = (k: (typeof ATTACK_KINDS)[number]) => {
    const v = r.attacker.kinds[k].mibBeforeAnswer ?? [];
    if (!v.length) return "—";
    const mid = v[Math.floor(v.length / 2)] as number;
    return `${mid.toFixed(1)} / ${(v[v.length - 1] as number).toFixed(1)}`;
  };
  return [
    ATTACK_HEADING,
    "",
    `The embedded default (\`main.ts\` as a child process, PGlite, its own Temporal dev server), \`EMBEDDING_THREADS=${o.threads}\`${Object.entries(
      o.env,
    )
      .map(([k, v]) => `, \`${k}=${v}\``)
      .join("")}, every other setting its default.`,
    `${o.clients} clients in ${o.tenants} tenants (each tenant its own scoped key) send, each in a loop with ${o.thinkMs} ms between an answer and`,
    `the next request, ${Math.round(o.addShare * 100)} % adds (\`POST /v3/documents\`, a one-sentence note) and otherwise searches of their tenant, \`/v3/search\``,
    `and \`/v4/search\` in turn; ${o.seedDocs} documents per tenant before. First ${o.phaseS} s of the clients alone, then ${o.phaseS} s with a third party`,
    `beside them from the same address (127.0.0.1), as a process of its own (\`bench/lib/attacker.ts\`): chunked bodies of ${n(o.bodyMiB)} MiB,`,
    `${perSecond(o.bodyRate)}, at most ${o.bodiesInFlight} at a time (no content-length, from a generator: the attacker holds no body), made-up bearer keys, ${perSecond(o.keyRate)}, and`,
    `console sign-ins, ${perSecond(o.signInRate)} (a known console user's e-mail with wrong passwords, and made-up keys, in turn).`,
    "",
    "| phase | client requests | errors | p50 | p95 | adds | service RSS, peak (above idle) |",
    "|---|---|---|---|---|---|---|",
    phaseRow(r.baseline, r.rssIdleBytes),
    phaseRow(r.attack, r.rssIdleBytes),
    "",
    "| route | p50 / p95 alone | p50 / p95 with the attacker | p95 ratio |",
    "|---|---|---|---|",
    ...routes.map((route) => {
      const a = r.baseline.byRoute[route];
      const b = r.attack.byRoute[route];
      return `| \`${route}\` | ${a ? `${ms(a.p50)} / ${ms(a.p95)}` : "—"} | ${b ? `${ms(b.p50)} / ${ms(b.p95)}` : "—"} | ${a && b ? `${(b.p95 / a.p95).toFixed(2)}×` : "—"} |`;
    }),
    "",
    "What the attacker sent and how the service answered:",
    "",
    "| kind | sent | answers by status | no answer | MiB written before the answer (median / max) |",
    "|---|---|---|---|---|",
    ...ATTACK_KINDS.map((k) => {
      const s = r.attacker.kinds[k];
      const cut = s.unfinished ? `, ${n(s.unfinished)} cut at the end` : "";
      return `| ${ATTACK_KIND_ABOUT[k]} | ${n(s.sent)} | ${statuses(s.statuses)} | ${statuses(s.noAnswer)}${cut} | ${CHUNKED_KINDS.includes(k) ? chunkedMiB(k) : ""} |`;
    }),
    "",
    `- Client errors: ${n(c.errors)} (bound: 0): ${yes(c.errors === 0)}.${r.attack.errorSamples.length ? ` With the attacker, e.g. ${r.attack.errorSamples.map((s) => `\`${s.replace(/\|/g, "\\|")}\``).join("; ")}.` : ""}`,
    `- p95 with the attacker / without: ${Number.isFinite(c.ratio) ? `${c.ratio.toFixed(2)}×` : "n/a"} (bound: ${ATTACK_BOUNDS.p95Ratio}×): ${yes(c.p95Holds)}.`,
    `- The service's RSS: ${mib(r.rssIdleBytes)} idle, peak ${mib(r.baseline.rssPeakBytes)} alone and ${mib(r.attack.rssPeakBytes)} with the attacker, ${mib(r.rssAfterBytes)} at the end; the rise, ${mib(c.rise)} (bound: ${ATTACK_BOUNDS.rssRiseMiB} MiB): ${yes(c.rssHolds)}.${r.guardTripped ? ` The attacker was stopped early when the rise passed ${n(o.guardMiB)} MiB (the run's guard).` : ""} The attacker's own peak RSS: ${r.attack.attackerRssPeakBytes !== undefined ? mib(r.attack.attackerRssPeakBytes) : "n/a"}.`,
    `- Right after the flood, from the same address: ${r.afterFlood.map((a) => `${a.who} on \`${a.route}\` ${a.status ?? a.error}`).join(", ")}: ${c.keysAnswer ? "valid keys answer" : "**a valid key was refused**"}${r.lockoutMs > 0 ? `; the admin key answered again after ${ms(r.lockoutMs)}` : ""}.`,
    `- Adds present afterwards (listed through the API under their tenant's tag): ${r.documents.map((d) => `${d.tag} ${n(d.present)} of ${n(d.added)} added (${n(d.done)} done, ${n(d.failed)} failed, ${n(d.pending)} not yet processed)`).join("; ")}; missing: ${n(c.missing)}: ${yes(c.nothingLost)}.`,
    `- Waiting for the adds to be processed: ${ms(r.drainMs.between)} between the phases, ${ms(r.drainMs.end)} at the end.`,
    "",
  ];
}
