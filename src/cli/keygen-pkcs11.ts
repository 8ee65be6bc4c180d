/**
 * `dacd keygen --pkcs11`: a fresh secp256k1 key pair generated inside the configured token
 * (private half sensitive, not extractable, labelled pkcs11_key_label), never over an existing
 * label; its address is printed for registration with the committee.
 */
import type { Config } from "../config/config.js";
import { DacdError } from "../errors.js";
import { tokenSpec } from "../service/member-signer.js";
import { TokenSession } from "../signer/pkcs11/token.js";

export async function keygenPkcs11(config: Config, print: (line: string) => void): Promise<void> {
  const missing = (["pkcs11_module", "pkcs11_token_label", "pkcs11_key_label"] as const).filter(
    (k) => config[camel(k)] === undefined,
  );
  if (missing.length > 0)
    throw new DacdError(
      "CONFIG",
      `keygen --pkcs11: ${missing.join(", ")} must be set in ${config.configPath}`,
    );
  const spec = await tokenSpec(config);
  const session = TokenSession.open(spec, { findKey: false, readWrite: true });
  try {
    const label = spec.keyLabel;
    const taken =
      session.find("CKO_PRIVATE_KEY", label).length + session.find("CKO_PUBLIC_KEY", label).length;
    if (taken > 0)
      throw new DacdError(
        "CONFIG",
        `keygen --pkcs11: token ${JSON.stringify(spec.tokenLabel)} already holds a key labelled ${JSON.stringify(label)}; refusing to overwrite`,
      );
    print(session.generateKeyPair(label).address);
  } finally {
    session.close();
  }
}

function camel(key: "pkcs11_module" | "pkcs11_token_label" | "pkcs11_key_label"): keyof Config {
  return (
    {
      pkcs11_module: "pkcs11Module",
      pkcs11_token_label: "pkcs11TokenLabel",
      pkcs11_key_label: "pkcs11KeyLabel",
    } as const
  )[key];
}
