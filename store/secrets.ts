import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

/** AES-256-GCM with a 32-byte key; each value gets a fresh 96-bit IV and is authenticated. */
export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  static fromKey(key: Buffer): SecretBox {
    if (key.length !== 32) throw new Error("the encryption key must be 32 bytes");
    return new SecretBox(key);
  }

  encrypt(clear: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    const data = Buffer.concat([cipher.update(clear, "utf8"), cipher.final()]);
    const tag = cipher.getAuthTag();
    return ["v1", iv, tag, data].map((p) => (typeof p === "string" ? p : p.toString("base64url"))).join(":");
  }

  /**
   * A key of its own for one purpose (HKDF-SHA256 of this key, `purpose` as info): signing download links
   * needs a secret every API process shares, and MEMORY_ENCRYPTION_KEY already is one, but a signature must
   * never be made with the key that encrypts.
   */
  derive(purpose: string): Buffer {
    return Buffer.from(hkdfSync("sha256", this.key, Buffer.alloc(0), `memory-service:${purpose}`, 32));
  }

  decrypt(sealed: string): string {
    const [version, iv, tag, data] = sealed.split(":");
    if (version !== "v1" || !iv || !tag || data === undefined) throw new Error("not a sealed secret");
    const decipher = createDecipheriv("aes-256-gcm", this.key, Buffer.from(iv, "base64url"));
    decipher.setAuthTag(Buffer.from(tag, "base64url"));
    return Buffer.concat([decipher.update(Buffer.from(data, "base64url")), decipher.final()]).toString(
      "utf8",
    );
  }
}

/** A 32-byte key from base64 or hex text. */
export function parseEncryptionKey(text: string): Buffer {
  const t = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(t) ? Buffer.from(t, "hex") : Buffer.from(t, "base64");
  if (key.length !== 32) throw new Error("MEMORY_ENCRYPTION_KEY must be 32 bytes, base64 or hex encoded");
  return key;
}

/**
 * MEMORY_ENCRYPTION_KEY if set; otherwise DATA_DIR/encryption-key, generated at first start (mode
 * 0600). With several API processes, set MEMORY_ENCRYPTION_KEY to the same value in each.
 */
/**
 * Writes `file` unless it exists, atomically: the content goes to a private temporary file that is then
 * hard-linked into place. Processes starting together on one DATA_DIR (an API and a worker sharing a
 * volume) all end up reading the same complete key; the losers of the race keep the winner's.
 */
function createOnce(file: string, content: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  writeFileSync(temporary, content, { mode: 0o600, flag: "wx" });
  try {
    linkSync(temporary, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  } finally {
    rmSync(temporary, { force: true });
  }
}

export function loadSecretBox(opts: { envKey?: string; dataDir: string }): SecretBox {
  if (opts.envKey) return SecretBox.fromKey(parseEncryptionKey(opts.envKey));
  const file = path.join(opts.dataDir, "encryption-key");
  if (!existsSync(file)) createOnce(file, `${randomBytes(32).toString("base64")}\n`);
  return SecretBox.fromKey(parseEncryptionKey(readFileSync(file, "utf8")));
}
