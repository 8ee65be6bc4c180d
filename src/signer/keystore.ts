/**
 * Ethereum V3 keystores (Web3 Secret Storage): the encrypted form a member key is kept in on disk.
 *
 * Supported: kdf `scrypt` or `pbkdf2` (prf `hmac-sha256`), cipher `aes-128-ctr`, MAC =
 * keccak256(derivedKey[16..32] ‖ ciphertext). The MAC is checked (in constant time) before anything
 * is decrypted. KDF parameters are bounded so a hostile file cannot make the daemon allocate gigabytes
 * or spin for minutes. Errors are DacdError "CONFIG" naming the field; none carries key material.
 */
import { createCipheriv, createDecipheriv, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { pbkdf2Async } from "@noble/hashes/pbkdf2.js";
import { scryptAsync } from "@noble/hashes/scrypt.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { keccak_256 } from "@noble/hashes/sha3.js";
import { DacdError } from "../errors.js";

export type KeystoreKdf = "scrypt" | "pbkdf2";

export interface ScryptParams {
  dklen: number;
  salt: string;
  n: number;
  r: number;
  p: number;
}

export interface Pbkdf2Params {
  dklen: number;
  salt: string;
  c: number;
  prf: "hmac-sha256";
}

export interface KeystoreV3 {
  version: 3;
  id: string;
  address: string;
  crypto: {
    cipher: "aes-128-ctr";
    cipherparams: { iv: string };
    ciphertext: string;
    kdf: KeystoreKdf;
    kdfparams: ScryptParams | Pbkdf2Params;
    mac: string;
  };
}

export interface EncryptKeystoreOptions {
  kdf?: KeystoreKdf;
  /** Cheap KDF parameters (scrypt n=2^12, pbkdf2 c=2^12): for tests only, never for a real key. */
  fastForTests?: boolean;
}

/** Limits on what a keystore may ask of us. Standard files (geth, wiki vectors) are well inside. */
export const KDF_LIMITS = {
  scryptMaxN: 1 << 20,
  scryptMaxR: 32,
  scryptMaxP: 16,
  /** scrypt allocates about 128·n·r bytes. */
  scryptMaxMemBytes: 1024 * 1024 * 1024,
  /** Total work ∝ n·r·p. geth "standard" (2^18, 8, 1) and the wiki vector (2^18, 1, 8) are 2^21. */
  scryptMaxWork: 1 << 24,
  pbkdf2MaxC: 1 << 23,
} as const;

const DKLEN = 32;
const HEX_RE = /^[0-9a-fA-F]*$/;

function fail(field: string | undefined, message: string): DacdError {
  return new DacdError(
    "CONFIG",
    field !== undefined ? `keystore field ${field}: ${message}` : `keystore: ${message}`,
  );
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function getField(obj: Record<string, unknown>, name: string, path: string): unknown {
  if (!(name in obj) || obj[name] === undefined || obj[name] === null) throw fail(path, "missing");
  return obj[name];
}

function getObject(obj: Record<string, unknown>, name: string, path: string): Record<string, unknown> {
  const v = getField(obj, name, path);
  if (!isRecord(v)) throw fail(path, "must be an object");
  return v;
}

function getString(obj: Record<string, unknown>, name: string, path: string): string {
  const v = getField(obj, name, path);
  if (typeof v !== "string") throw fail(path, "must be a string");
  return v;
}

function getHex(
  obj: Record<string, unknown>,
  name: string,
  path: string,
  length?: { exact?: number; min?: number },
): Uint8Array {
  let s = getString(obj, name, path);
  if (s.startsWith("0x") || s.startsWith("0X")) s = s.slice(2);
  if (s.length % 2 !== 0 || !HEX_RE.test(s)) throw fail(path, "must be an even-length hex string");
  const b = new Uint8Array(Buffer.from(s, "hex"));
  if (length?.exact !== undefined && b.length !== length.exact)
    throw fail(path, `must be ${length.exact} bytes, got ${b.length}`);
  if (length?.min !== undefined && b.length < length.min)
    throw fail(path, `must be at least ${length.min} bytes, got ${b.length}`);
  return b;
}

function getInt(obj: Record<string, unknown>, name: string, path: string, min: number, max: number): number {
  const v = getField(obj, name, path);
  if (typeof v !== "number" || !Number.isSafeInteger(v)) throw fail(path, "must be an integer");
  if (v < min || v > max) throw fail(path, `must be between ${min} and ${max}, got ${v}`);
  return v;
}

type ParsedKdf =
  | { kind: "scrypt"; salt: Uint8Array; n: number; r: number; p: number }
  | { kind: "pbkdf2"; salt: Uint8Array; c: number };

function parseKdf(crypto: Record<string, unknown>, cryptoName: string): ParsedKdf {
  const kdf = getString(crypto, "kdf", `${cryptoName}.kdf`);
  const params = getObject(crypto, "kdfparams", `${cryptoName}.kdfparams`);
  const p = (f: string): string => `${cryptoName}.kdfparams.${f}`;
  if (kdf === "scrypt" || kdf === "pbkdf2") {
    getInt(params, "dklen", p("dklen"), DKLEN, DKLEN);
  }
  if (kdf === "scrypt") {
    const salt = getHex(params, "salt", p("salt"), { min: 1 });
    const n = getInt(params, "n", p("n"), 2, KDF_LIMITS.scryptMaxN);
    if ((n & (n - 1)) !== 0) throw fail(p("n"), `must be a power of two, got ${n}`);
    const r = getInt(params, "r", p("r"), 1, KDF_LIMITS.scryptMaxR);
    const pp = getInt(params, "p", p("p"), 1, KDF_LIMITS.scryptMaxP);
    if (128 * n * r > KDF_LIMITS.scryptMaxMemBytes)
      throw fail(
        p("n"),
        `scrypt n=${n}, r=${r} needs more than ${KDF_LIMITS.scryptMaxMemBytes} bytes of memory`,
      );
    if (n * r * pp > KDF_LIMITS.scryptMaxWork)
      throw fail(p("p"), `scrypt n·r·p = ${n * r * pp} exceeds the limit ${KDF_LIMITS.scryptMaxWork}`);
    return { kind: "scrypt", salt, n, r, p: pp };
  }
  if (kdf === "pbkdf2") {
    const prf = getString(params, "prf", p("prf"));
    if (prf !== "hmac-sha256") throw fail(p("prf"), `unsupported prf "${prf}" (supported: hmac-sha256)`);
    const salt = getHex(params, "salt", p("salt"), { min: 1 });
    const c = getInt(params, "c", p("c"), 1, KDF_LIMITS.pbkdf2MaxC);
    return { kind: "pbkdf2", salt, c };
  }
  throw fail(`${cryptoName}.kdf`, `unsupported kdf "${kdf}" (supported: scrypt, pbkdf2)`);
}

async function deriveKey(password: string, kdf: ParsedKdf): Promise<Uint8Array> {
  const pw = new TextEncoder().encode(password);
  try {
    if (kdf.kind === "scrypt") {
      return await scryptAsync(pw, kdf.salt, {
        N: kdf.n,
        r: kdf.r,
        p: kdf.p,
        dkLen: DKLEN,
        maxmem: KDF_LIMITS.scryptMaxMemBytes + 1024 * 1024,
      });
    }
    return await pbkdf2Async(sha256, pw, kdf.salt, { c: kdf.c, dkLen: DKLEN });
  } finally {
    pw.fill(0);
  }
}

function keystoreMac(derivedKey: Uint8Array, ciphertext: Uint8Array): Uint8Array {
  const buf = new Uint8Array(16 + ciphertext.length);
  buf.set(derivedKey.subarray(16, 32), 0);
  buf.set(ciphertext, 16);
  return keccak_256(buf);
}

function aes128ctr(encrypt: boolean, key: Uint8Array, iv: Uint8Array, data: Uint8Array): Uint8Array {
  const c = encrypt ? createCipheriv("aes-128-ctr", key, iv) : createDecipheriv("aes-128-ctr", key, iv);
  const out = Buffer.concat([c.update(data), c.final()]);
  const res = new Uint8Array(out);
  out.fill(0);
  return res;
}

/**
 * Decrypts a V3 keystore (an already parsed object, or its JSON text) and returns the 32-byte
 * private key. Accepts `crypto` or `Crypto` (older geth files). Rejects a wrong password by MAC.
 */
export async function decryptKeystore(json: unknown, password: string): Promise<Uint8Array> {
  let doc = json;
  if (typeof doc === "string") {
    try {
      doc = JSON.parse(doc) as unknown;
    } catch {
      // The parser's message may quote file content; do not pass it on.
      throw fail(undefined, "not valid JSON");
    }
  }
  if (!isRecord(doc)) throw fail(undefined, "must be a JSON object");
  if (doc.version !== 3)
    throw fail("version", `unsupported version ${JSON.stringify(doc.version) ?? "(none)"}`);
  const cryptoName = "crypto" in doc ? "crypto" : "Crypto" in doc ? "Crypto" : "crypto";
  const crypto = getObject(doc, cryptoName, cryptoName);

  const cipher = getString(crypto, "cipher", `${cryptoName}.cipher`);
  if (cipher !== "aes-128-ctr")
    throw fail(`${cryptoName}.cipher`, `unsupported cipher "${cipher}" (supported: aes-128-ctr)`);
  const cipherparams = getObject(crypto, "cipherparams", `${cryptoName}.cipherparams`);
  const iv = getHex(cipherparams, "iv", `${cryptoName}.cipherparams.iv`, { exact: 16 });
  const ciphertext = getHex(crypto, "ciphertext", `${cryptoName}.ciphertext`, { exact: 32 });
  const mac = getHex(crypto, "mac", `${cryptoName}.mac`, { exact: 32 });
  const kdf = parseKdf(crypto, cryptoName);

  const derived = await deriveKey(password, kdf);
  try {
    const computed = keystoreMac(derived, ciphertext);
    if (!timingSafeEqual(computed, mac)) {
      throw new DacdError("CONFIG", "MAC mismatch: wrong password or corrupted keystore");
    }
    return aes128ctr(false, derived.subarray(0, 16), iv, ciphertext);
  } finally {
    derived.fill(0);
  }
}

/** Lower-case hex address (no 0x) of a secp256k1 private key: keccak256(pubkey x‖y)[12..32]. */
function plainAddress(privateKey: Uint8Array): string {
  const pub = secp256k1.getPublicKey(privateKey, false);
  return Buffer.from(keccak_256(pub.subarray(1)).subarray(12)).toString("hex");
}

/**
 * Encrypts a 32-byte private key into a standard V3 keystore object (write it with JSON.stringify).
 * Defaults: scrypt n=2^18, r=8, p=1 (geth "standard"), or pbkdf2-hmac-sha256 c=262144.
 */
export async function encryptKeystore(
  privateKey: Uint8Array,
  password: string,
  opts: EncryptKeystoreOptions = {},
): Promise<KeystoreV3> {
  if (!(privateKey instanceof Uint8Array) || privateKey.length !== 32)
    throw new DacdError("CONFIG", "keystore: private key must be 32 bytes");
  if (!secp256k1.utils.isValidSecretKey(privateKey))
    throw new DacdError("CONFIG", "keystore: private key is out of range");
  const kdfKind = opts.kdf ?? "scrypt";
  const salt = new Uint8Array(randomBytes(32));
  const iv = new Uint8Array(randomBytes(16));
  const saltHex = Buffer.from(salt).toString("hex");

  let parsed: ParsedKdf;
  let kdfparams: ScryptParams | Pbkdf2Params;
  if (kdfKind === "scrypt") {
    const n = opts.fastForTests ? 1 << 12 : 1 << 18;
    parsed = { kind: "scrypt", salt, n, r: 8, p: 1 };
    kdfparams = { dklen: DKLEN, salt: saltHex, n, r: 8, p: 1 };
  } else if (kdfKind === "pbkdf2") {
    const c = opts.fastForTests ? 1 << 12 : 262144;
    parsed = { kind: "pbkdf2", salt, c };
    kdfparams = { dklen: DKLEN, salt: saltHex, c, prf: "hmac-sha256" };
  } else {
    throw new DacdError(
      "CONFIG",
      `keystore: unsupported kdf "${String(kdfKind)}" (supported: scrypt, pbkdf2)`,
    );
  }

  const derived = await deriveKey(password, parsed);
  try {
    const ciphertext = aes128ctr(true, derived.subarray(0, 16), iv, privateKey);
    const mac = keystoreMac(derived, ciphertext);
    return {
      version: 3,
      id: randomUUID(),
      address: plainAddress(privateKey),
      crypto: {
        cipher: "aes-128-ctr",
        cipherparams: { iv: Buffer.from(iv).toString("hex") },
        ciphertext: Buffer.from(ciphertext).toString("hex"),
        kdf: kdfKind,
        kdfparams,
        mac: Buffer.from(mac).toString("hex"),
      },
    };
  } finally {
    derived.fill(0);
  }
}
