/**
 * The member key as the configuration places it: read from private_key_path (signer: file), or
 * left in a PKCS#11 token (signer: pkcs11) and used through a session. Either is found at start,
 * before anything is fetched or signed: a wrong PIN, a missing key or a wrong curve is one line.
 */
import type { Config } from "../config/config.js";
import { DacdError } from "../errors.js";
import { createSigner, type ChainKind } from "../signer/create-signer.js";
import { loadPrivateKey, readSecretLine, secretPath } from "../signer/key-file.js";
import { Pkcs11Signer } from "../signer/pkcs11/pkcs11-signer.js";
import type { TokenSpec } from "../signer/pkcs11/token.js";
import type { Signer } from "../signer/signer.js";
import { runtimeSettings } from "../config/runtime-settings.js";

/** systemd credential name (LoadCredential=) holding the token's user PIN. */
export const PIN_CREDENTIAL = "dacd-pkcs11-pin";

export type MemberKey =
  | { readonly custody: "file"; readonly key: Uint8Array }
  | { readonly custody: "pkcs11"; readonly signer: Pkcs11Signer };

export interface MemberKeyOptions {
  readonly allowInsecureKeyFile?: boolean;
  readonly warn?: (message: string) => void;
  /** Each failed token call (signer: pkcs11). */
  readonly onSignerError?: (err: DacdError) => void;
}

export async function loadMemberKey(config: Config, opts: MemberKeyOptions = {}): Promise<MemberKey> {
  if (config.signer === "pkcs11") {
    const spec = await tokenSpec(config, opts);
    const signer = await Pkcs11Signer.open({
      spec,
      callTimeoutMs: config.pkcs11TimeoutS * 1000,
      onError: opts.onSignerError,
    });
    return { custody: "pkcs11", signer };
  }
  const key = await loadPrivateKey(config.privateKeyPath!, {
    passwordPath: config.privateKeyPasswordPath,
    credentialsDirectory: runtimeSettings().credentialsDirectory,
    allowInsecurePermissions: opts.allowInsecureKeyFile,
    warn: opts.warn,
  });
  return { custody: "file", key };
}

/** The token, key and PIN the configuration names (the PIN from its file or systemd credential). */
export async function tokenSpec(config: Config, opts: MemberKeyOptions = {}): Promise<TokenSpec> {
  const pinPath = secretPath(config.pkcs11PinPath, PIN_CREDENTIAL, runtimeSettings().credentialsDirectory);
  if (pinPath === undefined)
    throw new DacdError(
      "CONFIG",
      `signer: pkcs11 needs the token's PIN: set pkcs11_pin_path, or provide the systemd credential ${PIN_CREDENTIAL}`,
    );
  const pin = await readSecretLine(pinPath, "PIN file", {
    allowInsecurePermissions: opts.allowInsecureKeyFile,
    warn: opts.warn,
  });
  if (pin.length === 0) throw new DacdError("CONFIG", `PIN file ${pinPath} is empty`);
  return {
    module: config.pkcs11Module!,
    tokenLabel: config.pkcs11TokenLabel!,
    keyLabel: config.pkcs11KeyLabel!,
    pin,
  };
}

/**
 * The signer for the chain kind: a file key is copied into it (and the caller's copy wiped); a
 * token's signer fits Ethereum-kind chains only (no HSM offers the STARK curve).
 */
export function signerFor(member: MemberKey, kind: ChainKind): Signer {
  if (member.custody === "file") {
    try {
      return createSigner(kind, member.key);
    } finally {
      member.key.fill(0);
    }
  }
  if (kind !== "ethereum")
    throw new DacdError(
      "CONFIG",
      `signer: pkcs11 does not apply to chain kind ${kind} (no HSM offers the STARK curve; use signer: file)`,
    );
  return member.signer;
}

/** Drops a key that will not be used: wiped from memory, or its token session closed. */
export async function discardMemberKey(member: MemberKey): Promise<void> {
  if (member.custody === "file") member.key.fill(0);
  else await member.signer.close();
}
