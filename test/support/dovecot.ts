// A private Dovecot IMAP server for one test: its own config, state, logs and Maildir in a temp dir, a
// listener on 127.0.0.1 at a free high port, one passwd-file user. Debian's dovecot-imapd provides the
// binary (scripts/setup-dovecot.sh); the system service is never used.
//
// Messages are put into (and taken out of) the Maildir as files, the way a local delivery agent would:
// Dovecot notices both at the next sync of the mailbox, so a test sees new mail and expunges without an
// IMAP client of its own.

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { Socket } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { findFreePort } from "../../runtime/temporal-dev-server.ts";

export const DOVECOT_BINARY = "/usr/sbin/dovecot";

export interface DovecotOptions {
  user?: string;
  password?: string;
  /**
   * Also offer SASL XOAUTH2, with tokens checked by Dovecot's oauth2 passdb against this RFC 7662
   * introspection endpoint (a test's own HTTP server on 127.0.0.1).
   */
  oauth2IntrospectionUrl?: string;
  /**
   * The SASL mechanisms of that passdb: XOAUTH2 (default) and/or OAUTHBEARER (RFC 7628). Gmail offers
   * both (https://developers.google.com/workspace/gmail/imap/xoauth2-protocol).
   */
  oauth2Mechanisms?: ("xoauth2" | "oauthbearer")[];
  /**
   * Mailboxes the server flags with a special use in LIST (RFC 6154), e.g. `{ Quarantine: "\\Junk",
   * "All Mail": "\\All" }`: how Gmail and most servers mark Trash, Junk and an all-messages view.
   */
  specialUse?: Record<string, string>;
}

/** Which messages `remove` takes out: every header given must match exactly (Subject, Message-ID...). */
export interface MessageMatch {
  subject?: string;
  messageId?: string;
}

export interface Dovecot {
  host: string;
  port: number;
  user: string;
  password: string;
  /** The user's Maildir (Maildir++ layout: INBOX at the top, other mailboxes in `.<name>` folders). */
  maildir: string;
  /** Drops a raw RFC 822 message into a mailbox (created when missing); returns the file's path. */
  deliver(rawMessage: string | Buffer, mailbox?: string): string;
  /** Deletes matching messages from a mailbox, which IMAP clients then see as expunged; returns how many. */
  remove(match: MessageMatch, mailbox?: string): number;
  /**
   * Gives the mailbox a new UIDVALIDITY while the server runs (`doveadm mailbox update`), as a server
   * does after its index is rebuilt: every UID an IMAP client knows is void.
   */
  resetUidValidity(mailbox: string, uidValidity: number): void;
  /** Dovecot's log so far (auth failures and config errors end up here). */
  log(): string;
  stop(): Promise<void>;
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
    socket.connect(port, "127.0.0.1");
  });
}

function headerValue(raw: string, name: string): string | undefined {
  const head = raw.split(/\r?\n\r?\n/, 1)[0] ?? "";
  const unfolded = head.replace(/\r?\n[ \t]+/g, " ");
  const re = new RegExp(`^${name}:[ \\t]*(.*)$`, "im");
  return unfolded.match(re)?.[1]?.trim();
}

export async function startDovecot(options: DovecotOptions = {}): Promise<Dovecot> {
  if (!existsSync(DOVECOT_BINARY)) {
    throw new Error(`${DOVECOT_BINARY} is missing: run scripts/setup-dovecot.sh (as root) first`);
  }
  const user = options.user ?? "alice";
  const password = options.password ?? `pw-${randomBytes(6).toString("hex")}`;
  const dir = mkdtempSync(join(tmpdir(), "memory-dovecot-"));
  const isRoot = process.getuid?.() === 0;
  // Dovecot refuses to run mail processes as root; as root the mail user is `nobody`, which must be able
  // to reach its home through the temp dir.
  const mailUid = isRoot ? 65534 : (process.getuid?.() ?? 0);
  const mailGid = isRoot ? 65534 : (process.getgid?.() ?? 0);
  const me = userInfo().username;
  if (isRoot) chmodSync(dir, 0o711);
  const home = join(dir, "home", user);
  const maildir = join(home, "Maildir");
  const own = (path: string) => {
    if (isRoot) chownSync(path, mailUid, mailGid);
  };
  for (const d of [join(dir, "home"), home, maildir, ...["cur", "new", "tmp"].map((s) => join(maildir, s))]) {
    mkdirSync(d, { recursive: true });
    own(d);
  }
  for (const d of ["run", "state"]) mkdirSync(join(dir, d));

  const port = await findFreePort();
  const passwdFile = join(dir, "passwd");
  writeFileSync(passwdFile, `${user}:{PLAIN}${password}:${mailUid}:${mailGid}::${home}::\n`, { mode: 0o644 });
  const logFile = join(dir, "dovecot.log");
  const oauth2 = options.oauth2IntrospectionUrl;
  const oauth2Mechanisms = (options.oauth2Mechanisms ?? ["xoauth2"]).join(" ");
  const oauth2Conf = join(dir, "oauth2.conf");
  if (oauth2) {
    writeFileSync(
      oauth2Conf,
      [
        `introspection_url = ${oauth2}`,
        "introspection_mode = post",
        "username_attribute = username",
        "active_attribute = active",
        "active_value = true",
        "",
      ].join("\n"),
    );
  }
  // One-line `{ ... }` blocks are rejected by Dovecot's parser: every block spans lines.
  const config = [
    `instance_name = memory-test-${randomBytes(4).toString("hex")}`,
    `base_dir = ${join(dir, "run")}`,
    `state_dir = ${join(dir, "state")}`,
    `log_path = ${logFile}`,
    "protocols = imap",
    "listen = 127.0.0.1",
    "ssl = no",
    "disable_plaintext_auth = no",
    `auth_mechanisms = plain login${oauth2 ? ` ${oauth2Mechanisms}` : ""}`,
    "auth_verbose = yes",
    // Refused logins are answered within half a second instead of after the default 2 s.
    "auth_failure_delay = 0",
    "mail_location = maildir:~/Maildir",
    // A test's mail lives in a temp dir for seconds: fsync only costs time.
    "mail_fsync = never",
    `default_login_user = ${isRoot ? "dovenull" : me}`,
    `default_internal_user = ${isRoot ? "dovecot" : me}`,
    ...(isRoot ? [] : [`first_valid_uid = ${mailUid}`]),
    ...(oauth2
      ? ["passdb {", "  driver = oauth2", `  mechanisms = ${oauth2Mechanisms}`, `  args = ${oauth2Conf}`, "}"]
      : []),
    "passdb {",
    "  driver = passwd-file",
    ...(oauth2 ? ["  mechanisms = plain login"] : []),
    `  args = scheme=PLAIN username_format=%u ${passwdFile}`,
    "}",
    "userdb {",
    "  driver = passwd-file",
    `  args = username_format=%u ${passwdFile}`,
    "}",
    "namespace inbox {",
    "  inbox = yes",
    "  separator = /",
    ...Object.entries(options.specialUse ?? {}).flatMap(([mailbox, use]) => [
      `  mailbox "${mailbox}" {`,
      `    special_use = ${use}`,
      "  }",
    ]),
    "}",
    "service imap-login {",
    "  inet_listener imap {",
    "    address = 127.0.0.1",
    `    port = ${port}`,
    "  }",
    "  inet_listener imaps {",
    "    port = 0",
    "  }",
    "  chroot =",
    "}",
    "service anvil {",
    "  chroot =",
    // No auth penalty (logins from an address slowed down for seconds after a failed one): tests log in
    // with wrong credentials on purpose. Mode 0 leaves the penalty socket out.
    "  unix_listener anvil-auth-penalty {",
    "    mode = 0",
    "  }",
    "}",
    "",
  ].join("\n");
  const configFile = join(dir, "dovecot.conf");
  writeFileSync(configFile, config);

  const child: ChildProcess = spawn(DOVECOT_BINARY, ["-F", "-c", configFile], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (d: Buffer) => {
    output += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    output += d.toString();
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const readLog = () => {
    try {
      return output + readFileSync(logFile, "utf8");
    } catch {
      return output;
    }
  };

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };

  const deadline = Date.now() + 15_000;
  while (!(await canConnect(port))) {
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
      const log = readLog();
      await stop();
      throw new Error(`Dovecot did not start listening on 127.0.0.1:${port}:\n${log.slice(-3000)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }

  /** Maildir++: INBOX is the top folder, `a/b` lives in `.a.b` (the namespace separator is `/`). */
  const folderOf = (mailbox: string) =>
    mailbox.toUpperCase() === "INBOX" ? maildir : join(maildir, `.${mailbox.split("/").join(".")}`);

  let counter = 0;
  const deliver = (rawMessage: string | Buffer, mailbox = "INBOX") => {
    const folder = folderOf(mailbox);
    if (!existsSync(folder)) {
      mkdirSync(folder);
      own(folder);
      for (const s of ["cur", "new", "tmp"]) {
        mkdirSync(join(folder, s));
        own(join(folder, s));
      }
      // Maildir++ marks subfolders as mailboxes with this file.
      writeFileSync(join(folder, "maildirfolder"), "");
      own(join(folder, "maildirfolder"));
    }
    const bytes = typeof rawMessage === "string" ? Buffer.from(rawMessage) : rawMessage;
    counter += 1;
    const name = `${Math.floor(Date.now() / 1000)}.M${counter}P${process.pid}R${randomBytes(4).toString("hex")}.memory-test,S=${bytes.length}`;
    // Written in tmp/ and renamed into new/, so Dovecot never sees half a message.
    const tmp = join(folder, "tmp", name);
    writeFileSync(tmp, bytes, { mode: 0o644 });
    own(tmp);
    const target = join(folder, "new", name);
    renameSync(tmp, target);
    return target;
  };

  const remove = (match: MessageMatch, mailbox = "INBOX") => {
    const folder = folderOf(mailbox);
    let removed = 0;
    for (const sub of ["new", "cur"]) {
      const d = join(folder, sub);
      if (!existsSync(d)) continue;
      for (const name of readdirSync(d)) {
        const file = join(d, name);
        const raw = readFileSync(file, "latin1");
        const ok =
          (match.subject === undefined || headerValue(raw, "Subject") === match.subject) &&
          (match.messageId === undefined || headerValue(raw, "Message-ID") === match.messageId);
        if (ok && (match.subject !== undefined || match.messageId !== undefined)) {
          rmSync(file);
          removed += 1;
        }
      }
    }
    return removed;
  };

  const resetUidValidity = (mailbox: string, uidValidity: number) => {
    execFileSync(
      "doveadm",
      ["-c", configFile, "mailbox", "update", "-u", user, "--uid-validity", String(uidValidity), mailbox],
      {
        stdio: "pipe",
      },
    );
  };

  return {
    host: "127.0.0.1",
    port,
    user,
    password,
    maildir,
    deliver,
    remove,
    resetUidValidity,
    log: readLog,
    stop,
  };
}

/** Gmail's special folders, as LIST names them for one account language. */
export interface GmailFolders {
  allMail: string;
  trash: string;
  spam: string;
}

/**
 * The names a German-language account shows: "[Google Mail]" instead of "[Gmail]", and localized folder
 * names. Only the SPECIAL-USE flags say which is which
 * (https://developers.google.com/gmail/imap/imap-extensions#special-use_extension_of_the_list_command).
 */
export const GOOGLE_MAIL_DE: GmailFolders = {
  allMail: "[Google Mail]/Alle Nachrichten",
  trash: "[Google Mail]/Papierkorb",
  spam: "[Google Mail]/Spam",
};

/** The `specialUse` option that flags these folders as Gmail does: \All, \Trash, \Junk. */
export function gmailSpecialUse(folders: GmailFolders): Record<string, string> {
  return { [folders.allMail]: "\\All", [folders.trash]: "\\Trash", [folders.spam]: "\\Junk" };
}

/**
 * Gmail's labels imitated on a Dovecot started with `gmailSpecialUse`: each message is stored once in
 * All Mail and its label folders show it; Dovecot has no labels, so every label folder and All Mail
 * hold copies, kept in step here. What each action does follows Google's documentation of Gmail over
 * IMAP (https://support.google.com/mail/answer/7126229, https://support.google.com/mail/answer/78755):
 * archiving removes the INBOX label only (the message stays in All Mail); deleting moves it to Trash,
 * which is outside All Mail; reporting spam moves it to Spam, also outside All Mail.
 */
export function gmailMailbox(dovecot: Dovecot, folders: GmailFolders) {
  const raws = new Map<string, string | Buffer>();
  const labelsOf = new Map<string, Set<string>>();
  const messageIdOf = (raw: string | Buffer) => {
    const id = headerValue(typeof raw === "string" ? raw : raw.toString("latin1"), "Message-ID");
    if (!id) throw new Error("a Gmail-like message needs a Message-ID");
    return id;
  };
  const leave = (messageId: string) => {
    for (const label of labelsOf.get(messageId) ?? []) dovecot.remove({ messageId }, label);
    labelsOf.set(messageId, new Set());
    dovecot.remove({ messageId }, folders.allMail);
  };
  return {
    /** A new message with these labels (INBOX by default); returns its Message-ID. */
    deliver(raw: string | Buffer, labels: string[] = ["INBOX"]): string {
      const messageId = messageIdOf(raw);
      raws.set(messageId, raw);
      labelsOf.set(messageId, new Set(labels));
      for (const label of labels) dovecot.deliver(raw, label);
      dovecot.deliver(raw, folders.allMail);
      return messageId;
    },
    /** Archive: the INBOX label goes, the message stays in All Mail (and under its other labels). */
    archive(messageId: string): void {
      if (dovecot.remove({ messageId }, "INBOX") !== 1) throw new Error(`${messageId} is not in INBOX`);
      labelsOf.get(messageId)?.delete("INBOX");
    },
    /** Delete: every label goes, the message leaves All Mail and is in Trash. */
    trash(messageId: string): void {
      leave(messageId);
      dovecot.deliver(raws.get(messageId) as string | Buffer, folders.trash);
    },
    /** Report spam: as delete, into Spam. */
    spam(messageId: string): void {
      leave(messageId);
      dovecot.deliver(raws.get(messageId) as string | Buffer, folders.spam);
    },
  };
}
