/** Durations written as a number and a unit: `90s`, `30m`, `12h`, `7d`. */
const UNITS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
export type DurationUnit = keyof typeof UNITS;

export interface Duration {
  /** As written, normalised: `7d`, `12h`. */
  label: string;
  ms: number;
  amount: number;
  unit: DurationUnit;
}

export function parseDuration(raw: string): Duration | undefined {
  const match = /^\s*(\d{1,6})\s*([smhd])\s*$/i.exec(raw);
  if (!match) return undefined;
  const amount = Number(match[1]);
  const unit = (match[2] as string).toLowerCase() as DurationUnit;
  if (amount <= 0) return undefined;
  return { label: `${amount}${unit}`, ms: amount * UNITS[unit], amount, unit };
}

/**
 * Comma-separated lead times (`14d,7d,1d,12h`), longest first, duplicates removed; `off` or `none`
 * means no notices. Undefined when any part is not a duration.
 */
export function parseLeadTimes(raw: string): Duration[] | undefined {
  if (/^\s*(off|none)\s*$/i.test(raw)) return [];
  const parsed = raw.split(",").map(parseDuration);
  if (!parsed.length || parsed.some((d) => !d)) return undefined;
  const byMs = new Map((parsed as Duration[]).map((d) => [d.ms, d]));
  return [...byMs.values()].sort((a, b) => b.ms - a.ms);
}

const NAMES: Record<DurationUnit, string> = { s: "second", m: "minute", h: "hour", d: "day" };

/** `ms` in the given unit, rounded up: "7 days", "1 day", "80 seconds". */
export function describeIn(ms: number, unit: DurationUnit): string {
  const amount = Math.max(1, Math.ceil(ms / UNITS[unit]));
  return `${amount} ${NAMES[unit]}${amount === 1 ? "" : "s"}`;
}
