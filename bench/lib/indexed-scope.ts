// Shared by the scenario that measures rows through the in-memory search index (bench/search-imported.ts) and
// the section that sets them beside SQL's (bench/lib/imported-report.ts).

/** The suffix of the scope of the rows served through the in-memory search index (SEARCH_INDEX=memory). */
export const INDEXED_SCOPE = ", in-memory index (SEARCH_INDEX=memory)";
