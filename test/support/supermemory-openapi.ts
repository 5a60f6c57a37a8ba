import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import ajvFormats from "ajv-formats";
import { parse } from "yaml";

/**
 * Supermemory's OpenAPI document (test/fixtures/supermemory-openapi, the one SDK 5 is generated from) and an
 * ajv validator of response bodies against it. OpenAPI 3.1 schemas are JSON Schema 2020-12, hence Ajv2020.
 */

type Json = Record<string, unknown>;
export interface Operation {
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Json }> };
  parameters?: { in: string; name: string; required?: boolean }[];
  responses: Record<string, { content?: Record<string, { schema?: Json }> }>;
}
export interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Json> };
}

export const supermemoryDocument = parse(
  readFileSync(
    fileURLToPath(new URL("../fixtures/supermemory-openapi/openapi.yaml", import.meta.url)),
    "utf8",
  ),
) as OpenApiDocument;

const METHODS = ["get", "post", "put", "patch", "delete"];

/** "METHOD /path/{param}" for every operation of a document. */
export function operationsOf(doc: { paths: Record<string, Record<string, unknown>> }): string[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((m) => METHODS.includes(m))
      .map((m) => `${m.toUpperCase()} ${path}`),
  );
}

export function operation(key: string): Operation {
  const [method, path] = key.split(" ") as [string, string];
  const op = supermemoryDocument.paths[path]?.[method.toLowerCase()];
  if (!op) throw new Error(`${key} is not in Supermemory's document`);
  return op;
}

const COMPONENTS_ID = "https://supermemory.test/components";

/** The document's `#/components/schemas/X` references, pointed at the components schema added to ajv. */
function rewriteRefs(value: unknown, prefix: string): unknown {
  if (Array.isArray(value)) return value.map((v) => rewriteRefs(v, prefix));
  if (!value || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [
      k,
      k === "$ref" && typeof v === "string"
        ? v.replace("#/components/schemas/", prefix)
        : rewriteRefs(v, prefix),
    ]),
  );
}

function createValidator() {
  // Strict about keywords and formats (an unknown one fails compilation instead of passing silently); not
  // about the document's style (formats beside `anyOf` types), which does not change what validates.
  const ajv = new Ajv2020({ strict: true, strictTypes: false, allErrors: true });
  // A CommonJS module: its plugin is `.default` whether loaded by Node or by vitest.
  ajvFormats.default(ajv);
  // `example` is OpenAPI's annotation, `x-hidden` Speakeasy's (docs only); neither constrains a value.
  ajv.addVocabulary(["example", "x-hidden"]);
  // Not a JSON Schema format: Speakeasy generates an ISO 8601 date-time check for it (zod `.datetime()`),
  // so it is checked like `date-time`, never ignored.
  ajv.addFormat("datetime", ajv.formats["date-time"] as NonNullable<(typeof ajv.formats)[string]>);
  // A request-body format (multipart file); no response carries it.
  ajv.addFormat("binary", true);
  ajv.addSchema({
    $id: COMPONENTS_ID,
    $defs: rewriteRefs(supermemoryDocument.components.schemas, "#/$defs/"),
  });
  return ajv;
}

const ajv = createValidator();
const compiled = new Map<string, ValidateFunction>();

/**
 * Problems of one answer against the document, [] when it conforms: its status must be one the operation
 * documents (an undocumented 4xx/5xx is allowed: SDK 5 turns it into its generic API error, but its body must
 * still be the document's ErrorResponse), and its body must validate against that status's JSON schema.
 */
export function conformanceProblems(key: string, status: number, body: unknown): string[] {
  const op = operation(key);
  const response = op.responses[String(status)];
  if (!response) {
    if (status < 400) return [`${key}: status ${status} is not documented (${Object.keys(op.responses)})`];
    return validate(`${key} ErrorResponse`, { $ref: `${COMPONENTS_ID}#/$defs/ErrorResponse` }, body);
  }
  const content = response.content;
  if (!content) return body === undefined ? [] : [`${key} ${status}: documented without a body, got one`];
  const json = content["application/json"];
  if (json?.schema)
    return validate(`${key} ${status}`, rewriteRefs(json.schema, `${COMPONENTS_ID}#/$defs/`), body);
  const text = content["text/plain"];
  if (text?.schema) return validate(`${key} ${status} text`, text.schema, body);
  return [`${key} ${status}: no schema to check against (${Object.keys(content)})`];
}

function validate(name: string, schema: unknown, body: unknown): string[] {
  let fn = compiled.get(name);
  if (!fn) {
    fn = ajv.compile(schema as Json);
    compiled.set(name, fn);
  }
  if (fn(body)) return [];
  return (fn.errors ?? []).map((e: ErrorObject) => `${name}: ${e.instancePath || "/"} ${e.message}`);
}
