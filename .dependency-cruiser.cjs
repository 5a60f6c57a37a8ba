/**
 * The layers of docs/architecture.md, as rules a build can check (`npm run check:deps`, part of `npm test`
 * through test/architecture.test.ts). Each rule names an arrow it forbids; together they forbid every import
 * that runs up this picture (a layer imports only the layers below it, and itself):
 *
 *   entry points: main.ts, bin/, cli/, bench/, scripts/        (console/, the browser app, stands apart)
 *   runtime/                                                   wiring
 *   api/, worker/
 *   workflows/, activities/
 *   services/
 *   temporal/ (the Temporal client), store/, blobs/, pipeline/, connectors/
 *   contracts/ (what a workflow and its callers agree on), config/
 *
 * Type-only imports count too: a cycle through types still ties two modules' reasons to change together.
 */
const ours =
  "^(bin|api|services|temporal|store|blobs|pipeline|connectors|contracts|workflows|activities|worker|runtime|config|cli|console|bench|scripts)/";

module.exports = {
  forbidden: [
    {
      name: "no-cycles",
      severity: "error",
      comment: "No import cycle, through run-time or type-only imports.",
      from: {},
      to: { circular: true },
    },
    {
      name: "entry-points-on-top",
      severity: "error",
      comment:
        "main.ts, bin/, cli/, bench/ and scripts/ start things and runtime/ wires them; no layer below reaches back up to them, nor into the browser app.",
      from: {
        path: "^(api|worker|workflows|activities|services|temporal|store|blobs|pipeline|connectors|contracts|config)/",
      },
      to: { path: "^((runtime|bin|cli|bench|scripts|console)/|main\\.ts$)" },
    },
    {
      name: "console-stands-apart",
      severity: "error",
      comment: "The web console is a browser app talking HTTP to the API: it imports nothing of the service.",
      from: { path: "^console/" },
      to: { path: ours, pathNot: "^console/" },
    },
    {
      name: "activities-and-blobs-below-worker",
      severity: "error",
      comment:
        "Activities and the file store are called by the worker and the API; they never import them or the wiring.",
      from: { path: "^(activities|blobs)/" },
      to: { path: "^(api|runtime|worker)/" },
    },
    {
      name: "temporal-client-below-services",
      severity: "error",
      comment:
        "temporal/ starts and signals workflows for the services that use it: it knows the store, the contracts and config, nothing above.",
      from: { path: "^temporal/" },
      to: { path: ours, pathNot: "^(temporal|store|contracts|config)/" },
    },
    {
      name: "blobs-below-services",
      severity: "error",
      comment: "The file store knows files and config only.",
      from: { path: "^blobs/" },
      to: { path: ours, pathNot: "^(blobs|config)/" },
    },
    {
      name: "sql-only-in-store",
      severity: "error",
      comment: "drizzle and the database drivers are the store's: everyone else calls named store functions.",
      from: {
        path: "^(api|services|activities|workflows|worker|temporal|pipeline|connectors|blobs|config)/",
      },
      to: { path: "node_modules/(drizzle-orm|pg|@electric-sql)/" },
    },
    {
      name: "store-tables-only-in-store",
      severity: "error",
      comment:
        "Table objects build queries; outside the store only the schema's types and constants may be named.",
      from: { path: "^(api|services|activities|workflows|worker|temporal|pipeline|connectors)/" },
      to: { path: "^store/schema/", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "workflows-deterministic",
      severity: "error",
      comment:
        "Workflow code imports only other workflow modules and the contracts at run time (activities by type only), and no Node built-in.",
      from: { path: "^workflows/" },
      to: { pathNot: "^(workflows|contracts)/", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "workflows-no-node-builtins",
      severity: "error",
      from: { path: "^workflows/" },
      to: { dependencyTypes: ["core"] },
    },
    {
      name: "contracts-are-plain",
      severity: "error",
      comment:
        "contracts/ is imported by both sides of a workflow: constants and types, no code of either side.",
      from: { path: "^contracts/" },
      to: { path: "^(?!store/schema/)", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "temporal-client-from-above",
      severity: "error",
      comment:
        "temporal/ (starting, signalling, scheduling workflows) is called from api, services, runtime and worker only.",
      // Activities may name a client's type (the deps they are handed), never call it themselves.
      from: { path: "^(activities|workflows|store|pipeline|connectors|blobs|config)/" },
      to: { path: "^temporal/", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "store-below-services",
      severity: "error",
      comment: "The store knows tables and SQL, nothing above it.",
      from: { path: "^store/" },
      to: { path: ours, pathNot: "^(store|config)/" },
    },
    {
      name: "pipeline-below-services",
      severity: "error",
      comment: "The pipeline is the work itself: it knows nothing of HTTP, Temporal, services or the store.",
      from: { path: "^pipeline/" },
      to: { path: ours, pathNot: "^(pipeline|config)/" },
    },
    {
      name: "connectors-below-services",
      severity: "error",
      comment: "A connector lists and fetches from its provider; the engine around it decides what to save.",
      from: { path: "^connectors/" },
      to: { path: ours, pathNot: "^(connectors|config|pipeline)/" },
    },
    {
      name: "config-imports-nothing-of-ours",
      severity: "error",
      from: { path: "^config/" },
      to: { path: ours, pathNot: "^config/" },
    },
    {
      name: "services-below-api-and-worker",
      severity: "error",
      comment:
        "Services are called by api/ and activities/; they never reach up to HTTP, the worker or activities.",
      from: { path: "^services/" },
      to: {
        path: "^(api|worker|activities|runtime|workflows)/",
        dependencyTypesNot: ["type-only"],
      },
    },
    {
      name: "api-is-http-only",
      severity: "error",
      comment: "Handlers call services and the store; activities and workflows belong to the worker.",
      from: { path: "^api/" },
      to: {
        path: "^(activities|worker|workflows)/",
        dependencyTypesNot: ["type-only"],
      },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(node_modules|test|console/dist|data|test-artifacts)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default"],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
