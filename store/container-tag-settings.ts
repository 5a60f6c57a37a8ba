// A container tag's settings (display name, entity context, profile buckets) and what it holds, for
// GET /v3/container-tags/list and GET/PATCH /v3/container-tags/{containerTag}. A tag exists while documents
// or live memories carry it, or once its settings were saved.

import { and, arrayContains, count, eq, inArray, max, min, sql } from "drizzle-orm";
import { type Database, queryRows } from "./db.ts";
import {
  type ContainerTagSettingsRow,
  containerTagSettings,
  documents,
  memories,
  type ProfileBucket,
} from "./schema/index.ts";
import type { TagScope } from "./tag-scope.ts";

export interface TagSettingsPatch {
  name?: string;
  entityContext?: string | null;
  memoryFilesystemPaths?: string[] | null;
  profileBuckets?: ProfileBucket[];
}

export interface ContainerTagOverview {
  containerTag: string;
  documents: number;
  /** Live memories: the latest version, not forgotten. */
  memories: number;
  /** The settings row's creation, else the oldest document or memory. */
  createdAt: Date;
  /** The settings' last change, else the latest document or memory change. */
  updatedAt: Date;
  /** The latest change of a document or memory of the tag; null when it holds none. */
  lastActivityAt: Date | null;
  settings: ContainerTagSettingsRow | null;
}

/** At most this many tags are listed (the most used first). */
const MAX_TAGS = 1000;

const liveMemory = sql`${memories.isLatest} AND NOT ${memories.isForgotten}`;

export async function readTagSettings(
  db: Database,
  tag: string,
): Promise<ContainerTagSettingsRow | undefined> {
  const rows = await db.select().from(containerTagSettings).where(eq(containerTagSettings.containerTag, tag));
  return rows[0];
}

/** Saves the fields given (the others stay as they were); the row is made on the first save. */
export async function saveTagSettings(
  db: Database,
  tag: string,
  patch: TagSettingsPatch,
): Promise<ContainerTagSettingsRow> {
  const now = new Date();
  const set = {
    ...(patch.name !== undefined ? { name: patch.name } : {}),
    ...(patch.entityContext !== undefined ? { entityContext: patch.entityContext } : {}),
    ...(patch.memoryFilesystemPaths !== undefined
      ? { memoryFilesystemPaths: patch.memoryFilesystemPaths }
      : {}),
    ...(patch.profileBuckets !== undefined ? { profileBuckets: patch.profileBuckets } : {}),
    updatedAt: now,
  };
  const [row] = await db
    .insert(containerTagSettings)
    .values({ containerTag: tag, ...set, createdAt: now })
    .onConflictDoUpdate({ target: containerTagSettings.containerTag, set })
    .returning();
  return row as ContainerTagSettingsRow;
}

/** Deletes every tag's settings (an organisation reset); how many tags had some. */
export async function deleteAllTagSettings(db: Database): Promise<number> {
  const rows = await db.delete(containerTagSettings).returning({ tag: containerTagSettings.containerTag });
  return rows.length;
}

/** Deletes a tag's settings; true when it had some. */
export async function deleteTagSettings(db: Database, tag: string): Promise<boolean> {
  const rows = await db
    .delete(containerTagSettings)
    .where(eq(containerTagSettings.containerTag, tag))
    .returning({ tag: containerTagSettings.containerTag });
  return rows.length > 0;
}

function overview(
  tag: string,
  held: { documents: number; memories: number; firstAt: Date | null; lastAt: Date | null },
  settings: ContainerTagSettingsRow | null,
): ContainerTagOverview {
  const epoch = new Date(0);
  return {
    containerTag: tag,
    documents: held.documents,
    memories: held.memories,
    createdAt: settings?.createdAt ?? held.firstAt ?? epoch,
    updatedAt: settings?.updatedAt ?? held.lastAt ?? epoch,
    lastActivityAt: held.lastAt,
    settings,
  };
}

const asDate = (v: Date | string | null | undefined) =>
  v == null ? null : v instanceof Date ? v : new Date(v);

/** One tag: undefined when nothing carries it and it has no settings. */
export async function containerTagOverview(
  db: Database,
  tag: string,
): Promise<ContainerTagOverview | undefined> {
  const [docs, mems, settings] = await Promise.all([
    db
      .select({ n: count(), first: min(documents.createdAt), last: max(documents.updatedAt) })
      .from(documents)
      .where(arrayContains(documents.containerTags, [tag])),
    db
      .select({ n: count(), first: min(memories.createdAt), last: max(memories.updatedAt) })
      .from(memories)
      .where(and(eq(memories.containerTag, tag), liveMemory)),
    readTagSettings(db, tag),
  ]);
  const d = docs[0] ?? { n: 0, first: null, last: null };
  const m = mems[0] ?? { n: 0, first: null, last: null };
  if (!d.n && !m.n && !settings) return undefined;
  const dates = (
    a: Date | string | null,
    b: Date | string | null,
    pick: (x: number, y: number) => number,
  ) => {
    const xs = [asDate(a), asDate(b)].filter((x): x is Date => x !== null);
    return xs.length ? new Date(pick(...(xs.map((x) => x.getTime()) as [number, number]))) : null;
  };
  return overview(
    tag,
    {
      documents: Number(d.n),
      memories: Number(m.n),
      firstAt: dates(d.first, m.first, Math.min),
      lastAt: dates(d.last, m.last, Math.max),
    },
    settings ?? null,
  );
}

/** Every tag in the scope that holds something or has settings, the most used first. */
export async function listContainerTagOverviews(
  db: Database,
  scope: TagScope,
): Promise<ContainerTagOverview[]> {
  const inScope = (column: ReturnType<typeof sql>) =>
    scope
      ? sql`${column} IN (${sql.join(
          scope.map((t) => sql`${t}`),
          sql`, `,
        )})`
      : sql`TRUE`;
  const rows = await queryRows<{
    tag: string;
    documents: number | string;
    memories: number | string;
    first_at: Date | string | null;
    last_at: Date | string | null;
  }>(
    db,
    sql`
      SELECT tag, sum(d)::int AS documents, sum(m)::int AS memories, min(created) AS first_at, max(updated) AS last_at
      FROM (
        SELECT unnest(${documents.containerTags}) AS tag, 1 AS d, 0 AS m,
          ${documents.createdAt} AS created, ${documents.updatedAt} AS updated FROM ${documents}
        UNION ALL
        SELECT ${memories.containerTag} AS tag, 0 AS d, 1 AS m, ${memories.createdAt}, ${memories.updatedAt}
          FROM ${memories} WHERE ${liveMemory}
      ) t
      WHERE ${inScope(sql`tag`)}
      GROUP BY tag
      ORDER BY sum(d) + sum(m) DESC, tag
      LIMIT ${MAX_TAGS}`,
  );
  const settingsRows = await db
    .select()
    .from(containerTagSettings)
    .where(scope ? inArray(containerTagSettings.containerTag, [...scope]) : undefined)
    .limit(MAX_TAGS);
  const settingsOf = new Map(settingsRows.map((s) => [s.containerTag, s]));
  const listed = rows.map((r) =>
    overview(
      r.tag,
      {
        documents: Number(r.documents),
        memories: Number(r.memories),
        firstAt: asDate(r.first_at),
        lastAt: asDate(r.last_at),
      },
      settingsOf.get(r.tag) ?? null,
    ),
  );
  const seen = new Set(listed.map((t) => t.containerTag));
  for (const s of settingsRows) {
    if (!seen.has(s.containerTag) && listed.length < MAX_TAGS)
      listed.push(overview(s.containerTag, { documents: 0, memories: 0, firstAt: null, lastAt: null }, s));
  }
  return listed;
}
