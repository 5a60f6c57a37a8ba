import { type SQL, sql } from "drizzle-orm";

export interface FilterCondition {
  key: string;
  value: string;
  filterType?: "metadata" | "numeric" | "array_contains" | "string_contains";
  numericOperator?: ">" | "<" | ">=" | "<=" | "=";
  ignoreCase?: boolean;
  negate?: boolean;
}

export type FilterNode = FilterCondition | { AND: FilterNode[] } | { OR: FilterNode[] };

export const MAX_FILTER_DEPTH = 8;
export const MAX_FILTER_CONDITIONS = 200;

export class FilterError extends Error {}

const NUMERIC_OPERATORS = { ">": sql`>`, "<": sql`<`, ">=": sql`>=`, "<=": sql`<=`, "=": sql`=` } as const;

/**
 * Compiles a filter tree over a jsonb metadata column into one SQL condition. Keys and values are
 * always bound parameters; only the fixed operator tokens above are spliced in.
 */
export function compileFilter(metadata: SQL, node: FilterNode): SQL {
  let conditions = 0;
  const walk = (n: FilterNode, depth: number): SQL => {
    if (depth > MAX_FILTER_DEPTH)
      throw new FilterError(`filters are nested deeper than ${MAX_FILTER_DEPTH} levels`);
    if ("AND" in n || "OR" in n) {
      const op = "AND" in n ? "AND" : "OR";
      const children = (n as Record<string, FilterNode[]>)[op] ?? [];
      if (!children.length) return op === "AND" ? sql`TRUE` : sql`FALSE`;
      const parts = children.map((c) => walk(c, depth + 1));
      return sql`(${sql.join(parts, op === "AND" ? sql` AND ` : sql` OR `)})`;
    }
    if (++conditions > MAX_FILTER_CONDITIONS)
      throw new FilterError(`filters have more than ${MAX_FILTER_CONDITIONS} conditions`);
    const { exact, indexable } = compileCondition(metadata, n);
    // A missing key never matches, and its negation always does (NULL would drop both).
    if (n.negate) return sql`NOT coalesce(${exact}, FALSE)`;
    // The containment stays outside the coalesce, where the planner can use it. It is NULL only with NULL
    // metadata, and then the coalesced exact condition is FALSE, so the leaf is still never NULL.
    return indexable ? sql`(${indexable} AND coalesce(${exact}, FALSE))` : sql`coalesce(${exact}, FALSE)`;
  };
  return walk(node, 1);
}

/**
 * Whether every leaf of a filter carries a containment (indexableCondition) and none is negated: then the
 * metadata's GIN index answers the whole filter and the planner estimates how many documents it keeps.
 */
export function filterIsIndexable(node: FilterNode): boolean {
  if ("AND" in node || "OR" in node) {
    const children = (node as Record<string, FilterNode[]>)["AND" in node ? "AND" : "OR"] ?? [];
    return children.every(filterIsIndexable);
  }
  return !node.negate && indexableCondition(sql`NULL::jsonb`, node) !== undefined;
}

/**
 * Throws FilterError for a filter the store would refuse (nested too deep, too many conditions, a
 * numeric condition whose value is not a number), without running a query: callers check a request
 * before doing costly work (embedding the query) for it. Compiling is the check.
 */
export function checkFilter(node: FilterNode): void {
  compileFilter(sql`NULL::jsonb`, node);
}

/**
 * A JSON number literal that PostgreSQL's numeric holds: the only texts `->>` renders from a JSON number. Longer
 * ones, or exponents of four digits, may overflow numeric (the statement would fail), so they get no containment:
 * their exact condition alone still decides.
 */
const JSON_NUMBER = /^-?(0|[1-9]\d{0,39})(\.\d{1,40})?([eE][+-]?\d{1,3})?$/;

/**
 * The metadata objects `{key: value}` such that a row whose `->> key` text equals `text` contains one of them: the
 * string itself, the number or boolean written that way. Null when a text can also come from an object or array
 * (`->>` renders those as JSON text), which no short list covers.
 */
function containmentsForText(key: string, text: string): string[] | null {
  if (/^\s*[[{]/.test(text)) return null;
  const objects = [JSON.stringify({ [key]: text })];
  if (JSON_NUMBER.test(text)) objects.push(`{${JSON.stringify(key)}:${text}}`);
  if (text === "true" || text === "false") objects.push(`{${JSON.stringify(key)}:${text}}`);
  return objects;
}

/**
 * `metadata @> {...}` for one of the given objects: the form the metadata's GIN index (jsonb_path_ops, migration
 * 0016) answers, and whose selectivity the planner estimates from the column's statistics. Written beside the exact
 * condition, never instead of it: the exact condition keeps the meaning, this lets the planner find the few rows
 * a selective filter keeps without reading every document of the scope (in a 50,000-document tag: ~5 ms against
 * ~140 ms), and tells it how few they are (for an opaque expression it assumes half the rows).
 */
function containedIn(metadata: SQL, objects: string[]): SQL {
  const parts = objects.map((o) => sql`${metadata} @> ${o}::jsonb`);
  return sql`(${sql.join(parts, sql` OR `)})`;
}

/**
 * A condition's exact form, and where one exists a containment every matching row satisfies (containedIn), for
 * the planner; the leaf is their conjunction.
 */
function compileCondition(metadata: SQL, c: FilterCondition): { exact: SQL; indexable?: SQL } {
  return { exact: exactCondition(metadata, c), indexable: indexableCondition(metadata, c) };
}

function indexableCondition(metadata: SQL, c: FilterCondition): SQL | undefined {
  if (c.ignoreCase) return undefined;
  const type = c.filterType ?? "metadata";
  if (type === "array_contains") return containedIn(metadata, [JSON.stringify({ [c.key]: [c.value] })]);
  // jsonb compares numbers by value, so {key: n} holds every number equal to n however it was written.
  if (type === "numeric" && (c.numericOperator ?? "=") === "=")
    return containedIn(metadata, [JSON.stringify({ [c.key]: Number(c.value) })]);
  if (type !== "metadata") return undefined;
  const objects = containmentsForText(c.key, c.value);
  return objects ? containedIn(metadata, objects) : undefined;
}

function exactCondition(metadata: SQL, c: FilterCondition): SQL {
  const field = sql`(${metadata} -> ${c.key})`;
  const text = sql`(${metadata} ->> ${c.key})`;
  switch (c.filterType ?? "metadata") {
    case "metadata":
      return c.ignoreCase ? sql`lower(${text}) = lower(${c.value})` : sql`${text} = ${c.value}`;
    case "numeric": {
      const value = Number(c.value);
      if (!Number.isFinite(value))
        throw new FilterError(`filter on "${c.key}": "${c.value}" is not a number`);
      const op = NUMERIC_OPERATORS[c.numericOperator ?? "="];
      return sql`(CASE WHEN jsonb_typeof(${field}) = 'number' THEN (${text})::numeric END) ${op} ${value}`;
    }
    case "array_contains":
      return c.ignoreCase
        ? sql`(jsonb_typeof(${field}) = 'array' AND EXISTS (SELECT 1 FROM jsonb_array_elements_text(${field}) e WHERE lower(e) = lower(${c.value})))`
        : sql`(${containedIn(metadata, [JSON.stringify({ [c.key]: [c.value] })])} AND jsonb_typeof(${field}) = 'array')`;
    case "string_contains": {
      const pattern = `%${c.value.replace(/[\\%_]/g, (m) => `\\${m}`)}%`;
      return c.ignoreCase ? sql`${text} ILIKE ${pattern}` : sql`${text} LIKE ${pattern}`;
    }
  }
}
