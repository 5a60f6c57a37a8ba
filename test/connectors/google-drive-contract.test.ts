import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import pino from "pino";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ItemSkippedError } from "../../connectors/errors.ts";
import { type DriveCursor, googleDriveConnector } from "../../connectors/google-drive/index.ts";
import {
  type GoogleDriveConfig,
  type GoogleDriveSecrets,
  googleDriveConfigSchema,
} from "../../connectors/google-drive/settings.ts";
import type { PickedItem, SyncContext } from "../../connectors/types.ts";
import { type FakeGoogle, type FieldTree, parseFields, startFakeGoogle } from "../support/fake-google.ts";

// The Drive requests the connector makes, checked against Google's own description of Drive v3 as the
// client library ships it (@googleapis/drive's v3.ts is generated from the Drive discovery document: one
// `Params$Resource$…` interface per method with its query parameters, one `Schema$…` interface per
// resource). Every query parameter sent must be one the method takes, every name in `fields` one the
// response schema has, and what the fake answers with must fit those schemas too. A typo in a field list
// would otherwise pass against a fake written with the same typo and fail only against Google.

interface Method {
  params: string;
  template: string;
  verb: string;
  response: string;
  required: string[];
  pathParams: string[];
  matcher: RegExp;
}

const require = createRequire(import.meta.url);
const source = readFileSync(
  path.join(path.dirname(require.resolve("@googleapis/drive/package.json")), "v3.ts"),
  "utf8",
);

/** Interface name → property name → type text, for every interface in the generated file. */
function interfaces(): Map<string, Map<string, string>> {
  const file = ts.createSourceFile("v3.ts", source, ts.ScriptTarget.Latest, false);
  const out = new Map<string, Map<string, string>>();
  const visit = (node: ts.Node) => {
    if (ts.isInterfaceDeclaration(node)) {
      const props = new Map<string, string>();
      for (const member of node.members) {
        if (!ts.isPropertySignature(member) || !member.type) continue;
        const name = member.name.getText(file).replace(/^'|'$/g, "");
        props.set(name, member.type.getText(file));
      }
      out.set(node.name.text, props);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return out;
}

/** Each method's parameters interface, URL template, HTTP verb and response schema. */
function methods(): Method[] {
  const found: Method[] = [];
  const block =
    /as (Params\$Resource\$[\w$]+);[\s\S]*?url: \(\s*rootUrl\s*\+\s*'([^']+)'\s*\)[\s\S]*?method: '(\w+)'[\s\S]*?requiredParams: \[([^\]]*)\],\s*pathParams: \[([^\]]*)\][\s\S]*?createAPIRequest<([\w$]+)>/g;
  for (const m of source.matchAll(block)) {
    const list = (text: string) => [...text.matchAll(/'([^']+)'/g)].map((x) => x[1] as string);
    const template = m[2] as string;
    const pattern = template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+");
    found.push({
      params: m[1] as string,
      template,
      verb: m[3] as string,
      required: list(m[4] as string),
      pathParams: list(m[5] as string),
      response: m[6] as string,
      matcher: new RegExp(`^${pattern}$`),
    });
  }
  // Literal paths before templated ones: /files/generateIds is not files.get.
  return found.sort((a, b) => a.template.split("{").length - b.template.split("{").length);
}

describe("google-drive requests against the Drive v3 discovery description", () => {
  const types = interfaces();
  const api = methods();
  const standard = types.get("StandardParameters") as Map<string, string>;
  let fake: FakeGoogle;

  beforeAll(async () => {
    fake = await startFakeGoogle();
  });
  afterAll(async () => {
    await fake?.stop();
  });

  /** The names in `tree` that schema `schema` (and the schemas of its nested properties) does not have. */
  function unknownNames(tree: FieldTree | true, schema: string, at: string): string[] {
    if (tree === true) return [];
    const props = types.get(schema);
    if (!props) return [`${at}: no schema ${schema}`];
    const problems: string[] = [];
    for (const [name, sub] of Object.entries(tree)) {
      if (name === "*") continue;
      const type = props.get(name);
      if (type === undefined) {
        problems.push(`${at}${name} is not in ${schema}`);
        continue;
      }
      const nested = type.match(/Schema\$\w+/)?.[0];
      if (sub !== true && nested) problems.push(...unknownNames(sub, nested, `${at}${name}.`));
    }
    return problems;
  }

  /** The tree of names present in a JSON value, to check an answer the same way. */
  function namesOf(value: unknown): FieldTree | true {
    if (Array.isArray(value)) {
      const merged: FieldTree = {};
      for (const v of value) {
        const t = namesOf(v);
        if (t !== true) Object.assign(merged, t);
      }
      return Object.keys(merged).length ? merged : true;
    }
    if (value === null || typeof value !== "object") return true;
    const tree: FieldTree = {};
    for (const [k, v] of Object.entries(value)) tree[k] = namesOf(v);
    return tree;
  }

  it("reads the description: the methods the connector uses and the File schema", () => {
    const byParams = new Map(api.map((m) => [m.params, m]));
    expect(byParams.get("Params$Resource$Files$List")).toMatchObject({
      template: "/drive/v3/files",
      verb: "GET",
      response: "Schema$FileList",
    });
    expect(byParams.get("Params$Resource$Changes$List")).toMatchObject({ required: ["pageToken"] });
    expect(byParams.get("Params$Resource$Files$Export")).toMatchObject({
      template: "/drive/v3/files/{fileId}/export",
      required: ["fileId", "mimeType"],
    });
    expect(types.get("Schema$File")?.has("md5Checksum")).toBe(true);
    expect(standard.has("fields")).toBe(true);
  });

  it("sends only parameters each method takes and asks only for fields its schema has", async () => {
    const projects = fake.addFolder("Projects");
    const picked = fake.addFile({ name: "picked.txt", content: "Picked on its own." });
    fake.addFile({ name: "notes.txt", content: "Notes", parent: projects });
    fake.addDoc("Plan", "Roadmap", projects);
    fake.addSheet("Budget", [
      { title: "A", csv: "a,1\n" },
      { title: "B", csv: "b,2\n" },
    ]);
    fake.addSlides("Deck", "Slide one", projects);
    // Over maxFileBytes below: listed, its metadata read, never downloaded.
    fake.addFile({ name: "big.bin", mimeType: "application/octet-stream", content: "xxxxxxxx" });

    const session = await tokens(fake);
    const context = (config: Record<string, unknown>, selection?: PickedItem[]) => ({
      connectionId: `conn_contract_${Math.random().toString(16).slice(2)}`,
      config: googleDriveConfigSchema.parse(config),
      secrets: {},
      network: { allowPrivateNetwork: true, timeoutMs: 10_000, maxBytes: 1 << 24 },
      signal: new AbortController().signal,
      heartbeat: () => {},
      log: pino({ level: "silent" }),
      oauth: session,
      ...(selection ? { selection } : {}),
      apiBaseUrl: fake.url,
    });
    // Every kind of request: a full pass (listing, exports, downloads, changes), a selection with a picked
    // file and folder, a later pass from the changes feed, browsing and verifying.
    const full = context({ syncScope: "full", maxFileBytes: 4, pageSize: 2 });
    const carry = await pass(full);
    fake.updateFile(picked, { content: "Changed." });
    await pass(full, carry);
    await pass(
      context({ pageSize: 3 }, [
        { id: projects, name: "Projects", kind: "folder" },
        { id: picked, name: "picked.txt", kind: "file" },
      ]),
    );
    await googleDriveConnector.browse?.(full, null);
    await googleDriveConnector.verify?.(full);

    const problems: string[] = [];
    const used = new Set<string>();
    for (const request of fake.requests) {
      const url = new URL(request.path, fake.url);
      if (!url.pathname.startsWith("/drive/")) continue;
      const method = api.find((m) => m.verb === request.method && m.matcher.test(url.pathname));
      if (!method) {
        problems.push(`${request.method} ${url.pathname}: no such method`);
        continue;
      }
      used.add(method.params);
      const params = types.get(method.params) ?? new Map();
      for (const name of url.searchParams.keys()) {
        if (!params.has(name) && !standard.has(name))
          problems.push(`${method.params}: no query parameter ${name}`);
      }
      for (const name of method.required) {
        if (!method.pathParams.includes(name) && !url.searchParams.has(name))
          problems.push(`${method.params}: required ${name} missing`);
      }
      const fields = url.searchParams.get("fields");
      if (fields)
        problems.push(...unknownNames(parseFields(fields), method.response, `${method.params} fields `));
    }
    expect(problems).toEqual([]);
    expect([...used].sort()).toEqual([
      "Params$Resource$About$Get",
      "Params$Resource$Changes$Getstartpagetoken",
      "Params$Resource$Changes$List",
      "Params$Resource$Files$Export",
      "Params$Resource$Files$Get",
      "Params$Resource$Files$List",
    ]);
  });

  it("answers only with names the schemas have", async () => {
    const session = await tokens(fake);
    const token = await session.accessToken();
    const get = async (p: string) =>
      (await fetch(`${fake.url}/drive/v3/${p}`, { headers: { authorization: `Bearer ${token}` } })).json();
    const problems = [
      ...unknownNames(namesOf(await get("files?fields=*&pageSize=1000")), "Schema$FileList", "files.list "),
      ...unknownNames(namesOf(await get(`files/${fake.rootId}?fields=*`)), "Schema$File", "files.get "),
      ...unknownNames(
        namesOf(await get("changes?pageToken=1&fields=*")),
        "Schema$ChangeList",
        "changes.list ",
      ),
      ...unknownNames(
        namesOf(await get("changes/startPageToken")),
        "Schema$StartPageToken",
        "changes.getStartPageToken ",
      ),
    ];
    expect(problems).toEqual([]);
  });
});

/** Tokens from the fake's token endpoint, as the engine holds them after the consent flow. */
async function tokens(fake: FakeGoogle) {
  const code = fake.issueCode();
  const res = await fetch(fake.tokenUrl, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      client_id: fake.clientId,
      client_secret: fake.clientSecret,
    }),
  });
  const { access_token } = (await res.json()) as { access_token: string };
  return { accessToken: async () => access_token, refresh: async () => access_token };
}

/** One pass as the engine runs it, fetching every listed item; returns the carry. */
async function pass(ctx: SyncContext<GoogleDriveConfig, GoogleDriveSecrets>, carried?: unknown) {
  let cursor: DriveCursor | null = await googleDriveConnector.initialCursor(
    ctx,
    carried as Parameters<typeof googleDriveConnector.initialCursor>[1],
  );
  let carry: unknown;
  while (cursor) {
    const page = await googleDriveConnector.listPage(ctx, cursor);
    for (const item of page.items) {
      try {
        await googleDriveConnector.fetchItem(ctx, item);
      } catch (error) {
        if (!(error instanceof ItemSkippedError)) throw error;
      }
    }
    if (page.carry) carry = page.carry;
    cursor = page.next;
  }
  return carry;
}
