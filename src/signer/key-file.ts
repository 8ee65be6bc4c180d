/**
 * Loading the member key from disk: a raw hex key or a V3 keystore, told apart by content. The file
 * (and a keystore's password file) must not be accessible to group or others. Errors are one line of
 * DacdError "CONFIG" naming the path, never quoting file content.
 */
import { constants, promises as fs } from "node:fs";
import { join } from "node:path";
import { DacdError, isDacdError } from "../errors.js";
import { decryptKeystore } from "./keystore.js";

export interface LoadPrivateKeyOptions {
  /** File holding the keystore password. Default: the systemd credential `dacd-key-password`. */
  passwordPath?: string;
  /** Accept a key/password file readable or writable by group or others (warns). */
  allowInsecurePermissions?: boolean;
  warn?: (msg: string) => void;
  /** Where systemd hands over credentials ($CREDENTIALS_DIRECTORY, passed by the caller). */
  credentialsDirectory?: string;
}

/** systemd credential name (LoadCredential=/SetCredentialEncrypted=) holding the keystore password. */
export const PASSWORD_CREDENTIAL = "dacd-key-password";

/** Larger than any sane key file; keeps a mistaken path (a log, a device) from being slurped. */
const MAX_FILE_BYTES = 64 * 1024;

const RAW_HEX = /^(?:0x|0X)?([0-9a-fA-F]{64})$/;

function configError(message: string): DacdError {
  return new DacdError("CONFIG", message);
}

/** Reads a small secret file after checking it is a regular file with mode & 0o077 == 0. */
async function readSecretFile(
  path: string,
  what: string,
  opts: Pick<LoadPrivateKeyOptions, "allowInsecurePermissions" | "warn">,
): Promise<Buffer> {
  let handle: fs.FileHandle;
  try {
    // Non-blocking: opening a FIFO for reading would otherwise wait for a writer for ever; the
    // stat below refuses it (and devices, directories) as not a regular file.
    handle = await fs.open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw configError(`${what} ${path} does not exist`);
    if (code === "EACCES") throw configError(`${what} ${path} is not readable by this user`);
    throw configError(`${what} ${path} cannot be opened (${code ?? "unknown error"})`);
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw configError(`${what} ${path} is not a regular file`);
    if ((st.mode & 0o077) !== 0) {
      const mode = (st.mode & 0o777).toString(8).padStart(4, "0");
      if (!opts.allowInsecurePermissions)
        throw configError(
          `${what} ${path} has mode ${mode}: it must not be accessible to group or others (chmod 600 it)`,
        );
      opts.warn?.(`${what} ${path} has insecure mode ${mode} (accessible to group or others); chmod 600 it`);
    }
    if (st.size > MAX_FILE_BYTES) throw configError(`${what} ${path} is too large to be a key file`);
    const buf = Buffer.alloc(MAX_FILE_BYTES + 1);
    let n = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buf, n, buf.length - n, null);
      if (bytesRead === 0) break;
      n += bytesRead;
      if (n > MAX_FILE_BYTES) {
        buf.fill(0);
        throw configError(`${what} ${path} is too large to be a key file`);
      }
    }
    const out = Buffer.from(buf.subarray(0, n));
    buf.fill(0);
    return out;
  } finally {
    await handle.close();
  }
}

function parseRawKey(text: string, path: string): Uint8Array {
  const m = RAW_HEX.exec(text);
  if (!m) throw configError(`key file ${path} is neither 32 bytes of hex nor a V3 keystore`);
  const key = new Uint8Array(Buffer.from(m[1]!, "hex"));
  if (key.every((b) => b === 0)) throw configError(`key file ${path} holds the zero key`);
  return key;
}

/** Where the keystore's password was read: the configured file, or the systemd credential. */
function passwordSource(opts: LoadPrivateKeyOptions): string {
  return opts.passwordPath !== undefined
    ? `${opts.passwordPath}, the private_key_password_path`
    : `the systemd credential ${PASSWORD_CREDENTIAL}`;
}

async function readPassword(keyPath: string, opts: LoadPrivateKeyOptions): Promise<string> {
  const passwordPath = secretPath(opts.passwordPath, PASSWORD_CREDENTIAL, opts.credentialsDirectory);
  if (passwordPath === undefined)
    throw configError(
      `key file ${keyPath} is a keystore but no password file is configured ` +
        `(set private_key_password_path in the configuration, or --password-file on the command line, ` +
        `or provide the systemd credential ${PASSWORD_CREDENTIAL})`,
    );
  return readPasswordFile(passwordPath, opts);
}

/**
 * Reads a password file (same permission rule as the key file); one trailing newline (LF or CRLF)
 * is stripped, anything else is part of the password.
 */
export async function readPasswordFile(
  path: string,
  opts: Pick<LoadPrivateKeyOptions, "allowInsecurePermissions" | "warn"> = {},
): Promise<string> {
  return readSecretLine(path, "password file", opts);
}

/** A one-line secret file (a password, a token PIN) under the key file's permission rule. */
export async function readSecretLine(
  path: string,
  what: string,
  opts: Pick<LoadPrivateKeyOptions, "allowInsecurePermissions" | "warn"> = {},
): Promise<string> {
  const buf = await readSecretFile(path, what, opts);
  let pw = buf.toString("utf8");
  buf.fill(0);
  if (pw.endsWith("\r\n")) pw = pw.slice(0, -2);
  else if (pw.endsWith("\n")) pw = pw.slice(0, -1);
  return pw;
}

/**
 * The file a secret comes from: the configured path, or else the systemd credential `credential`
 * (LoadCredential=, handed over in `credentialsDirectory`: $CREDENTIALS_DIRECTORY); undefined when
 * there is neither.
 */
export function secretPath(
  configured: string | undefined,
  credential: string,
  credentialsDirectory: string | undefined,
): string | undefined {
  if (configured !== undefined) return configured;
  return credentialsDirectory ? join(credentialsDirectory, credential) : undefined;
}

/**
 * Loads the 32-byte member private key from `path`: raw hex (optional 0x, surrounding whitespace
 * allowed, nonzero) or a V3 keystore (a JSON object with `crypto`/`Crypto`) decrypted with the
 * password file. Range checks specific to a curve are left to the signer.
 */
export async function loadPrivateKey(path: string, opts: LoadPrivateKeyOptions = {}): Promise<Uint8Array> {
  const buf = await readSecretFile(path, "key file", opts);
  const text = buf.toString("utf8").trim();
  buf.fill(0);
  if (text.length === 0) throw configError(`key file ${path} is empty`);

  if (!text.startsWith("{")) return parseRawKey(text, path);

  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    // The parser's message can quote content; keep it out.
    throw configError(`key file ${path} looks like JSON but does not parse`);
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc) || !("crypto" in doc || "Crypto" in doc))
    throw configError(`key file ${path} is JSON but not a V3 keystore (no "crypto" object)`);

  const password = await readPassword(path, opts);
  let key: Uint8Array;
  try {
    key = await decryptKeystore(doc, password);
  } catch (e) {
    // A wrong password is the likely cause: say which file it came from.
    if (isDacdError(e))
      throw configError(`key file ${path}: ${e.message} (password from ${passwordSource(opts)})`);
    throw configError(`key file ${path}: keystore could not be decrypted`);
  }
  if (key.every((b) => b === 0)) throw configError(`key file ${path} holds the zero key`);
  return key;
}
