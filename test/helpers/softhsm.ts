/**
 * SoftHSM2 tokens for the PKCS#11 signer's tests: a SOFTHSM2_CONF in a temporary directory,
 * tokens made with softhsm2-util, keys generated or imported with OpenSC's pkcs11-tool.
 */
import { execFileSync } from "node:child_process";
import { createPrivateKey, createPublicKey } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { secp256k1 } from "@noble/curves/secp256k1.js";

const MODULES = [
  "/usr/lib/softhsm/libsofthsm2.so",
  "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
  "/usr/lib/aarch64-linux-gnu/softhsm/libsofthsm2.so",
  "/usr/local/lib/softhsm/libsofthsm2.so",
];

function onPath(cmd: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** The SoftHSM2 library, or why the tests cannot run here. */
export function softhsm(): { module: string } | { missing: string } {
  const module = MODULES.find((m) => existsSync(m));
  if (!module || !onPath("softhsm2-util"))
    return { missing: "softhsm2 is not installed (apt-get install softhsm2)" };
  if (!onPath("pkcs11-tool"))
    return { missing: "opensc's pkcs11-tool is not installed (apt-get install opensc)" };
  try {
    createRequire(import.meta.url)("pkcs11js");
  } catch {
    return { missing: "the optional package pkcs11js is not installed (npm install pkcs11js)" };
  }
  return { module };
}

export const PIN = "123456";

/**
 * A SoftHSM2 configuration in `dir`, made this process's SOFTHSM2_CONF (the library reads it when
 * it is initialised, in the signer's worker thread too).
 */
export async function softhsmConf(dir: string): Promise<string> {
  const tokens = join(dir, "tokens");
  await mkdir(tokens, { recursive: true });
  const conf = join(dir, "softhsm2.conf");
  await writeFile(conf, `directories.tokendir = ${tokens}\nobjectstore.backend = file\nlog.level = ERROR\n`);
  process.env.SOFTHSM2_CONF = conf;
  return tokens;
}

export function initToken(label: string): void {
  execFileSync(
    "softhsm2-util",
    ["--init-token", "--free", "--label", label, "--pin", PIN, "--so-pin", "87654321"],
    {
      stdio: "ignore",
    },
  );
}

function tool(module: string, token: string, args: string[]): void {
  execFileSync(
    "pkcs11-tool",
    ["--module", module, "--token-label", token, "--login", "--pin", PIN, ...args],
    {
      stdio: "ignore",
    },
  );
}

/** Imports a known secp256k1 private key (and its public half) into the token, labelled `label`. */
export async function importKey(
  module: string,
  token: string,
  label: string,
  privateKeyHex: string,
  dir: string,
): Promise<void> {
  const d = Buffer.from(privateKeyHex.replace(/^0x/, ""), "hex");
  const pub = secp256k1.getPublicKey(d, false);
  const b64 = (b: Uint8Array): string => Buffer.from(b).toString("base64url");
  const key = createPrivateKey({
    key: { kty: "EC", crv: "secp256k1", d: b64(d), x: b64(pub.subarray(1, 33)), y: b64(pub.subarray(33)) },
    format: "jwk",
  });
  const privDer = join(dir, `${label}.key.der`);
  const pubDer = join(dir, `${label}.pub.der`);
  await writeFile(privDer, key.export({ format: "der", type: "pkcs8" }), { mode: 0o600 });
  await writeFile(pubDer, createPublicKey(key).export({ format: "der", type: "spki" }));
  tool(module, token, ["--write-object", privDer, "--type", "privkey", "--label", label, "--id", "0a"]);
  tool(module, token, ["--write-object", pubDer, "--type", "pubkey", "--label", label, "--id", "0a"]);
}

/** A P-256 key pair generated in the token: a curve the member refuses. */
export function generateP256(module: string, token: string, label: string): void {
  tool(module, token, ["--keypairgen", "--key-type", "EC:prime256v1", "--label", label, "--id", "0b"]);
}
