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
    const condition = compileCondition(metadata, n);
    // A missing key never matches, and its negation always does (NULL would drop both).
    return n.negate ? sql`NOT coalesce(${condition}, FALSE)` : sql`coalesce(${condition}, FALSE)`;
  };
  return walk(node, 1);
}

/**
 * Throws FilterError for a filter the store would refuse (nested too deep, too many conditions, a
 * numeric condition whose value is not a number), without running a query: callers check a request
 * before doing costly work (embedding the query) for it. Compiling is the check.
 */
export function checkFilter(node: FilterNode): void {
  compileFilter(sql`NULL::jsonb`, node);
}

function compileCondition(metadata: SQL, c: FilterCondition): SQL {
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
        : sql`(jsonb_typeof(${field}) = 'array' AND ${field} @> jsonb_build_array(${c.value}::text))`;
    case "string_contains": {
      const pattern = `%${c.value.replace(/[\\%_]/g, (m) => `\\${m}`)}%`;
      return c.ignoreCase ? sql`${text} ILIKE ${pattern}` : sql`${text} LIKE ${pattern}`;
    }
  }
}
