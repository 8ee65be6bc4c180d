/**
 * `dacd keygen`: a fresh secp256k1 member key, written as a V3 keystore (password from a file or
 * asked at the terminal) or, with `raw`, as a hex key file; mode 0600, never overwriting. The
 * checksummed address is printed for registration with the committee.
 */
import { promises as fs } from "node:fs";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { DacdError } from "../errors.js";
import { ethAddressFromPrivateKey } from "../signer/eth-signer.js";
import { encryptKeystore, type KeystoreKdf } from "../signer/keystore.js";
import { readPasswordFile } from "../signer/key-file.js";
import { toHex0x } from "../util/bytes.js";
import { canPrompt, promptNewPassword } from "./password-prompt.js";

export interface KeygenOptions {
  out: string;
  /** The keystore's password; else `raw`, else asked at the terminal. */
  passwordFile?: string;
  /** Write the key as hex instead of a keystore. */
  raw?: boolean;
  kdf?: KeystoreKdf;
  /** Where the address line goes; default stdout. */
  print?: (line: string) => void;
  /** Where a password comes from without a password file (default: the terminal). */
  askPassword?: () => Promise<string>;
  /** Cheap KDF parameters, for tests only. */
  fastForTests?: boolean;
}

export async function keygenCommand(opts: KeygenOptions): Promise<void> {
  const password = opts.raw ? undefined : await passwordFor(opts);
  const key = secp256k1.utils.randomSecretKey();
  try {
    const address = ethAddressFromPrivateKey(key);
    const content =
      password === undefined
        ? toHex0x(key) + "\n"
        : JSON.stringify(
            await encryptKeystore(key, password, {
              kdf: opts.kdf ?? "scrypt",
              ...(opts.fastForTests ? { fastForTests: true } : {}),
            }),
            null,
            2,
          ) + "\n";
    await writeNewSecretFile(opts.out, content);
    (opts.print ?? ((line: string) => process.stdout.write(line + "\n")))(address);
  } finally {
    key.fill(0);
  }
}

async function passwordFor(opts: KeygenOptions): Promise<string> {
  if (opts.passwordFile !== undefined) {
    const password = await readPasswordFile(opts.passwordFile);
    if (password.length === 0)
      throw new DacdError("USAGE", `keygen: password file ${opts.passwordFile} is empty`);
    return password;
  }
  if (opts.askPassword) return opts.askPassword();
  if (!canPrompt())
    throw new DacdError(
      "USAGE",
      "keygen: no terminal to ask the keystore password on: give --password-file FILE, or --raw for a hex key file",
    );
  return promptNewPassword();
}

/**
 * Creates `path` with mode 0600 and writes it; an existing file is refused (exit 2), never
 * overwritten: it may hold the only copy of a registered key.
 */
async function writeNewSecretFile(path: string, content: string): Promise<void> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(path, "wx", 0o600);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "EEXIST")
      throw new DacdError("BAD_INPUT", `keygen: ${path} already exists; refusing to overwrite`);
    throw new DacdError("BAD_INPUT", `keygen: cannot create ${path} (${code ?? "unknown error"})`);
  }
  try {
    // The umask can only narrow 0600; set it exactly so the mode never depends on the environment.
    await handle.chmod(0o600);
    await handle.writeFile(content, "utf8");
    await handle.sync();
  } finally {
    await handle.close();
  }
}
