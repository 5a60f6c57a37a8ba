import { Command, InvalidArgumentError, Option } from "commander";
import { addCommand } from "./add.ts";
import { ApiClient, CliError, DEFAULT_URL, resolveConnection } from "./client.ts";
import { listDocumentsCommand, STATUSES, type Status } from "./documents.ts";
import { createKeyCommand, disableKeyCommand } from "./keys.ts";
import { mcpCommand } from "./mcp.ts";
import { createOutput, type Output } from "./output.ts";
import { reprocessFailedCommand } from "./reprocess.ts";
import { searchCommand } from "./search.ts";

interface GlobalOptions {
  url?: string;
  key?: string;
  json?: boolean;
}

const integer = (min: number, max: number) => (raw: string) => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new InvalidArgumentError(`expected a whole number from ${min} to ${max}`);
  }
  return n;
};

/** Every command gets a client and an output built from the global flags; errors become one line and an exit code. */
function run<A extends unknown[]>(
  body: (client: ApiClient, out: Output, ...args: A) => Promise<void>,
): (...args: [...A, Command]) => Promise<void> {
  return async (...args) => {
    const command = args[args.length - 1] as Command;
    const globals = command.optsWithGlobals<GlobalOptions>();
    const out = createOutput(Boolean(globals.json));
    const client = new ApiClient(resolveConnection({ url: globals.url, key: globals.key }));
    await body(client, out, ...(args.slice(0, -1) as A));
  };
}

export function buildProgram(): Command {
  const program = new Command()
    .name("npm run cli --")
    .description("Operate a running document memory service over its HTTP API.")
    .option("--url <url>", `the service (default: MEMORY_URL, else ${DEFAULT_URL})`)
    .option(
      "--key <key>",
      "API key (default: MEMORY_API_KEY, else MEMORY_ADMIN_KEY, else the admin key in DATA_DIR/admin-key)",
    )
    .option("--json", "print the result as JSON (progress bars and notes go to stderr)")
    .showHelpAfterError();

  const containerTag = () => new Option("--container-tag <tag>", "container tag");
  const timeout = () =>
    new Option("--timeout <seconds>", "with --wait: give up waiting after this long")
      .argParser(integer(1, 7 * 86_400))
      .default(3600);

  program
    .command("add")
    .description("upload every file of a folder (POST /v3/documents/file); hidden files are skipped")
    .argument("<folder>", "the folder to upload")
    .addOption(containerTag())
    .option("--recursive", "also upload the files of subfolders", false)
    .option("--wait", "wait until every document is done or failed, then summarise", false)
    .addOption(timeout())
    .addOption(new Option("--concurrency <n>", "uploads at a time").argParser(integer(1, 32)).default(4))
    .action(
      run(
        (
          client,
          out,
          folder: string,
          opts: {
            containerTag?: string;
            recursive: boolean;
            wait: boolean;
            concurrency: number;
            timeout: number;
          },
        ) => addCommand(client, out, folder, { ...opts, timeoutSeconds: opts.timeout }),
      ),
    );

  program
    .command("search")
    .description("hybrid search over processed documents (POST /v3/search)")
    .argument("<query>", "what to look for")
    .addOption(containerTag())
    .addOption(new Option("--limit <n>", "documents returned").argParser(integer(1, 100)).default(10))
    .action(
      run((client, out, query: string, opts: { containerTag?: string; limit: number }) =>
        searchCommand(client, out, query, opts),
      ),
    );

  program
    .command("documents")
    .description("list documents, newest first (POST /v3/documents/list)")
    .addOption(
      new Option(
        "--status <status>",
        "only this status (filtered by the CLI: the API has no such filter)",
      ).choices(STATUSES),
    )
    .addOption(containerTag())
    .addOption(new Option("--limit <n>", "documents shown").argParser(integer(1, 100_000)).default(50))
    .action(
      run((client, out, opts: { status?: Status; containerTag?: string; limit: number }) =>
        listDocumentsCommand(client, out, opts),
      ),
    );

  program
    .command("reprocess-failed")
    .description("process every failed document again, from its URL, text or stored file")
    .addOption(containerTag())
    .option("--wait", "wait until they are done or failed again", false)
    .addOption(timeout())
    .option("--dry-run", "only list what would be reprocessed", false)
    .action(
      run((client, out, opts: { containerTag?: string; wait: boolean; dryRun: boolean; timeout: number }) =>
        reprocessFailedCommand(client, out, { ...opts, timeoutSeconds: opts.timeout }),
      ),
    );

  const keys = program.command("keys").description("scoped API keys (admin key needed)");
  keys
    .command("create")
    .description("create a key limited to a container tag; prints its secret once (POST /v3/auth/scoped-key)")
    .addOption(containerTag().makeOptionMandatory())
    .option("--name <name>", "a name to recognise it by (default: scoped_<tag>)")
    .addOption(
      new Option("--expires-in-days <days>", "lifetime (the service's default: 365)").argParser(
        integer(1, 365),
      ),
    )
    .action(
      run((client, out, opts: { containerTag: string; name?: string; expiresInDays?: number }) =>
        createKeyCommand(client, out, opts),
      ),
    );
  keys
    .command("disable")
    .description("disable a scoped key at once; its documents stay (DELETE /v3/auth/scoped-key/:id)")
    .argument("<id>", "the key's id (not its secret)")
    .action(run((client, out, id: string) => disableKeyCommand(client, out, id)));

  program
    .command("mcp")
    .description(
      "the MCP memory server over stdio, for AI assistants that start a command: bridges to the service's /mcp",
    )
    .option(
      "--project <tag>",
      "container tag for calls that name none, sent as x-sm-project (default: MEMORY_PROJECT, else the service's default)",
    )
    .action(async (opts: { project?: string }, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      await mcpCommand(resolveConnection({ url: globals.url, key: globals.key }), {
        containerTag: opts.project || process.env.MEMORY_PROJECT || undefined,
      });
    });

  return program;
}

export async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    process.stderr.write(`error: ${error.message}\n`);
    process.exitCode = error.exitCode;
  }
}

await main(process.argv);
