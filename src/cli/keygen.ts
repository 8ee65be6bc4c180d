/**
 * `dacd keygen`: a fresh secp256k1 member key, written only as a V3 keystore (mode 0600, never
 * overwriting), and its checksummed address printed for registration with the committee.
 */
import { promises as fs } from "node:fs";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { DacdError } from "../errors.js";
import { ethAddressFromPrivateKey } from "../signer/eth-signer.js";
import { encryptKeystore, type KeystoreKdf } from "../signer/keystore.js";
import { readPasswordFile } from "../signer/key-file.js";

export interface KeygenOptions {
  out: string;
  passwordFile: string;
  kdf?: KeystoreKdf;
  /** Where the address line goes; default stdout. */
  print?: (line: string) => void;
  /** Cheap KDF parameters, for tests only. */
  fastForTests?: boolean;
}

export async function keygenCommand(opts: KeygenOptions): Promise<void> {
  const password = await readPasswordFile(opts.passwordFile);
  if (password.length === 0)
    throw new DacdError("CONFIG", `keygen: password file ${opts.passwordFile} is empty`);
  const key = secp256k1.utils.randomSecretKey();
  try {
    const address = ethAddressFromPrivateKey(key);
    const keystore = await encryptKeystore(key, password, {
      kdf: opts.kdf ?? "scrypt",
      ...(opts.fastForTests ? { fastForTests: true } : {}),
    });
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(opts.out, "wx", 0o600);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "EEXIST")
        throw new DacdError("CONFIG", `keygen: ${opts.out} already exists; refusing to overwrite`);
      throw new DacdError("CONFIG", `keygen: cannot create ${opts.out} (${code ?? "unknown error"})`);
    }
    try {
      // The umask can only narrow 0600; set it exactly so the mode never depends on the environment.
      await handle.chmod(0o600);
      await handle.writeFile(JSON.stringify(keystore, null, 2) + "\n", "utf8");
      await handle.sync();
    } finally {
      await handle.close();
    }
    (opts.print ?? ((line: string) => process.stdout.write(line + "\n")))(address);
  } finally {
    key.fill(0);
  }
}
