// A TCP proxy in front of an IMAP server (Dovecot in tests) that passes every line through, except a
// command it was told to refuse: that one gets the answer Gmail gives an account past its daily IMAP
// limits, or another refusal Gmail gives and no local server can be made to give.
//
// Gmail's limits: https://support.google.com/a/answer/1071518 (2,500 MB download and 500 MB upload a day
// by IMAP). Past them Gmail answers commands, the login included, with `NO [ALERT] Account exceeded
// command or bandwidth limits`, or ends the session with an untagged BYE (RFC 9051 7.1.5) carrying it.

import { createConnection, createServer, type Server, type Socket } from "node:net";

export const GMAIL_BANDWIDTH_ALERT = "[ALERT] Account exceeded command or bandwidth limits";
/**
 * Gmail's answer to every FETCH of one message it cannot serve, as IMAP client users report it
 * (https://github.com/mscdex/node-imap/issues/209, /284): one message fails, the session and the others go on.
 */
export const GMAIL_FETCH_FAILURE = "Some messages could not be FETCHed (Failure)";

export interface ImapProxy {
  port: number;
  /**
   * The next client command whose name matches (AUTHENTICATE, UID FETCH, EXAMINE...) is not passed on:
   * "no" answers it with a tagged NO and keeps the session, "bye" sends a BYE and closes it.
   */
  refuseNext(command: RegExp, how: "no" | "bye", text?: string): void;
  /** Commands refused so far. */
  refused(): string[];
  stop(): Promise<void>;
}

export async function startImapProxy(target: { host: string; port: number }): Promise<ImapProxy> {
  const pending: { command: RegExp; how: "no" | "bye"; text: string }[] = [];
  const refused: string[] = [];
  const sockets = new Set<Socket>();

  const server: Server = createServer((client) => {
    const upstream = createConnection(target.port, target.host);
    sockets.add(client).add(upstream);
    upstream.pipe(client);
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
    client.on("close", () => upstream.destroy());
    let buffered = "";
    client.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("latin1");
      for (let end = buffered.indexOf("\r\n"); end >= 0; end = buffered.indexOf("\r\n")) {
        const line = buffered.slice(0, end + 2);
        buffered = buffered.slice(end + 2);
        // `<tag> <command> ...`: continuation lines (SASL answers, literals) have no command to match.
        const [, tag, name] = line.match(/^(\S+) ((?:UID )?[A-Z]+)/i) ?? [];
        const at = tag && name ? pending.findIndex((p) => p.command.test(name)) : -1;
        const rule = at >= 0 ? pending.splice(at, 1)[0] : undefined;
        if (!rule || !tag || !name) {
          upstream.write(Buffer.from(line, "latin1"));
          continue;
        }
        refused.push(name.toUpperCase());
        if (rule.how === "no") {
          client.write(`${tag} NO ${rule.text}\r\n`);
        } else {
          client.end(`* BYE ${rule.text}\r\n`);
          upstream.destroy();
          return;
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("the proxy has no port");

  return {
    port: address.port,
    refuseNext(command, how, text = GMAIL_BANDWIDTH_ALERT) {
      pending.push({ command, how, text });
    },
    refused: () => [...refused],
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
