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

/**
 * Where a filter reads a row's metadata: the column, and its copy with every string lower-cased (metadata_folded(),
 * migration 0019), on which ignoreCase conditions get a containment. Documents keep the copy in a stored generated
 * column (`metadata_folded`, not declared to drizzle); memories have an index on the expression (migration 0020:
 * a column rewrote their HNSW index), which a condition names as the index does.
 */
export interface MetadataColumns {
  metadata: SQL;
  folded: SQL;
}

/** The metadata columns of a table or alias in a statement: documents (alias d) or memories (alias m). */
export function metadataColumns(qualifier: "documents" | "d" | "memories" | "m"): MetadataColumns {
  const isDocument = qualifier === "documents" || qualifier === "d";
  return {
    metadata: sql.raw(`${qualifier}.metadata`),
    folded: sql.raw(isDocument ? `${qualifier}.metadata_folded` : `metadata_folded(${qualifier}.metadata)`),
  };
}

const NO_ROW: MetadataColumns = { metadata: sql`NULL::jsonb`, folded: sql`NULL::jsonb` };

const NUMERIC_OPERATORS = { ">": sql`>`, "<": sql`<`, ">=": sql`>=`, "<=": sql`<=`, "=": sql`=` } as const;

/**
 * Compiles a filter tree over a jsonb metadata column into one SQL condition. Keys and values are
 * always bound parameters; only the fixed operator tokens above are spliced in.
 */
export function compileFilter(columns: MetadataColumns, node: FilterNode): SQL {
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
    const { exact, indexable } = compileCondition(columns, n);
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
export function filterIsIndexable(node: FilterNode, columns: MetadataColumns): boolean {
  if ("AND" in node || "OR" in node) {
    const children = (node as Record<string, FilterNode[]>)["AND" in node ? "AND" : "OR"] ?? [];
    return children.every((child) => filterIsIndexable(child, columns));
  }
  return !node.negate && indexableCondition(columns, node) !== undefined;
}

/**
 * Throws FilterError for a filter the store would refuse (nested too deep, too many conditions, a
 * numeric condition whose value is not a number), without running a query: callers check a request
 * before doing costly work (embedding the query) for it. Compiling is the check.
 */
export function checkFilter(node: FilterNode): void {
  compileFilter(NO_ROW, node);
}

/**
 * A JSON number literal that PostgreSQL's numeric holds: the only texts `->>` renders from a JSON number. Longer
 * ones, or exponents of four digits, may overflow numeric (the statement would fail), so they get no containment:
 * their exact condition alone still decides.
 */
const JSON_NUMBER = /^-?(0|[1-9]\d{0,39})(\.\d{1,40})?([eE][+-]?\d{1,3})?$/;

/**
 * The JSON values `v` such that a field whose `->>` text equals `text` is one of them: the string itself, the number
 * or boolean written that way. With `ignoreCase`, the texts equal to it up to case: the string (its case is folded
 * by `metadata_folded` on both sides), and `true` or `false` for any spelling of those. Null when a text can also
 * come from an object or array (`->>` renders those as JSON text), which no short list covers.
 */
function valuesForText(text: string, ignoreCase: boolean): string[] | null {
  if (/^\s*[[{]/.test(text)) return null;
  const values = [JSON.stringify(text)];
  if (JSON_NUMBER.test(text)) values.push(text);
  const word = ignoreCase ? text.toLowerCase() : text;
  if (word === "true" || word === "false") values.push(word);
  return values;
}

/**
 * `metadata @> {...}` for one of the given objects: the form the metadata's GIN index (jsonb_path_ops, migration
 * 0016) answers, and whose selectivity the planner estimates from the column's statistics. Written beside the exact
 * condition, never instead of it: the exact condition keeps the meaning, this lets the planner find the few rows
 * a selective filter keeps without reading every document of the scope (in a 50,000-document tag: ~5 ms against
 * ~140 ms), and tells it how few they are (for an opaque expression it assumes half the rows).
 *
 * With `ignoreCase` it is the folded column (every string value and every string in an array lower-cased by
 * `metadata_folded`, migration 0019) that must contain the object folded by the same function: the database folds
 * the filter's value as it folded the rows, so the containment never drops a row whose exact condition
 * (`lower(...) = lower(...)`) keeps it, whatever characters its collation lower-cases. The function of a constant is
 * evaluated once, when the statement is planned.
 */
function containedIn(column: SQL, objects: string[], folded = false): SQL {
  const parts = objects.map((o) =>
    folded ? sql`${column} @> metadata_folded(${o}::jsonb)` : sql`${column} @> ${o}::jsonb`,
  );
  return sql`(${sql.join(parts, sql` OR `)})`;
}

/**
 * A condition's exact form, and where one exists a containment every matching row satisfies (containedIn), for
 * the planner; the leaf is their conjunction.
 */
function compileCondition(columns: MetadataColumns, c: FilterCondition): { exact: SQL; indexable?: SQL } {
  return { exact: exactCondition(columns.metadata, c), indexable: indexableCondition(columns, c) };
}

function indexableCondition(columns: MetadataColumns, c: FilterCondition): SQL | undefined {
  const type = c.filterType ?? "metadata";
  const key = JSON.stringify(c.key);
  // jsonb compares numbers by value, so {key: n} holds every number equal to n however it was written; a numeric
  // condition has no case to ignore.
  if (type === "numeric")
    return (c.numericOperator ?? "=") === "="
      ? containedIn(columns.metadata, [JSON.stringify({ [c.key]: Number(c.value) })])
      : undefined;
  if (type === "string_contains") return undefined;
  const ignoreCase = c.ignoreCase === true;
  const column = ignoreCase ? columns.folded : columns.metadata;
  // Case-sensitively an array holds the value only as a string (its exact condition is this containment); ignoring
  // case, any element whose text folds to the value's counts, so numbers and booleans too.
  const values =
    type === "array_contains" && !ignoreCase ? [JSON.stringify(c.value)] : valuesForText(c.value, ignoreCase);
  if (!values) return undefined;
  const objects = values.map((v) => (type === "array_contains" ? `{${key}:[${v}]}` : `{${key}:${v}}`));
  return containedIn(column, objects, ignoreCase);
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
        : sql`(${metadata} @> ${JSON.stringify({ [c.key]: [c.value] })}::jsonb AND jsonb_typeof(${field}) = 'array')`;
    case "string_contains": {
      const pattern = `%${c.value.replace(/[\\%_]/g, (m) => `\\${m}`)}%`;
      return c.ignoreCase ? sql`${text} ILIKE ${pattern}` : sql`${text} LIKE ${pattern}`;
    }
  }
}
