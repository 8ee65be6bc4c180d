/**
 * One session with the member's key in a PKCS#11 token, through the binding's synchronous calls
 * (run them off the event loop: pkcs11-signer.ts does, in a worker thread). Opening finds the
 * token by label, logs in, finds the private key by CKA_LABEL and its public key (same label, or
 * same CKA_ID) and checks the curve; signing is CKM_ECDSA over the hash as given.
 */
import { DacdError } from "../../errors.js";
import {
  constant,
  loadBinding,
  type Attribute,
  type Handle,
  type Pkcs11Binding,
  type Pkcs11Module,
} from "./binding.js";
import { addressOfPoint, checkSecp256k1Params, unwrapEcPoint } from "./ec-key.js";

export interface TokenSpec {
  /** Path of the token's PKCS#11 library. */
  readonly module: string;
  readonly tokenLabel: string;
  readonly keyLabel: string;
  readonly pin: string;
}

/** What the token returned for the member key (no secret: the private key never leaves it). */
export interface TokenKey {
  /** Uncompressed secp256k1 point. */
  readonly point: Uint8Array;
  readonly address: string;
}

/** Return codes that mean the configuration (PIN, token, key) is wrong rather than the token failing. */
const PIN_ERRORS = [
  "CKR_PIN_INCORRECT",
  "CKR_PIN_LEN_RANGE",
  "CKR_PIN_INVALID",
  "CKR_PIN_EXPIRED",
  "CKR_PIN_LOCKED",
];

function pkcs11Code(err: unknown): string | undefined {
  const m = err instanceof Error ? /\b(CKR_[A-Z_]+)\b/.exec(err.message) : null;
  return m?.[1];
}

/** A failing call as one line: the token's return code, the call, and what dacd was doing. */
export function tokenFailure(what: string, err: unknown): DacdError {
  const code = pkcs11Code(err);
  const detail = code ?? (err instanceof Error ? err.message.split("\n")[0] : String(err));
  return new DacdError("SIGNER", `PKCS#11 token: ${what} failed (${detail})`, { cause: err });
}

export class TokenSession {
  private constructor(
    private readonly b: Pkcs11Binding,
    private readonly mod: Pkcs11Module,
    private readonly session: Handle,
    readonly spec: TokenSpec,
    private readonly privateKey: Handle | undefined,
    readonly key: TokenKey | undefined,
  ) {}

  /**
   * Opens a logged-in session on the token labelled spec.tokenLabel. With `findKey` (signing)
   * the member key must be there; without it (keygen) it is looked up by the caller.
   */
  static open(spec: TokenSpec, opts: { findKey: boolean; readWrite?: boolean }): TokenSession {
    const b = loadBinding();
    const mod = new b.PKCS11();
    try {
      mod.load(spec.module);
    } catch (err) {
      throw new DacdError(
        "CONFIG",
        `pkcs11_module ${spec.module} cannot be loaded as a PKCS#11 library (${firstLine(err)})`,
      );
    }
    try {
      initialize(mod);
      const slot = findSlot(mod, spec);
      let session: Handle;
      try {
        const flags =
          constant(b, "CKF_SERIAL_SESSION") | (opts.readWrite ? constant(b, "CKF_RW_SESSION") : 0);
        session = mod.C_OpenSession(slot, flags);
      } catch (err) {
        throw tokenFailure(`opening a session on token ${JSON.stringify(spec.tokenLabel)}`, err);
      }
      try {
        login(b, mod, session, spec);
        const found = opts.findKey ? findMemberKey(b, mod, session, spec) : undefined;
        return new TokenSession(b, mod, session, spec, found?.handle, found?.key);
      } catch (err) {
        closeQuietly(() => mod.C_CloseSession(session));
        throw err;
      }
    } catch (err) {
      finalize(mod);
      throw err;
    }
  }

  /** Raw CKM_ECDSA signature (r ‖ s) of the 32-byte hash, not hashed again. */
  sign(hash: Uint8Array): Uint8Array {
    if (!this.privateKey) throw new Error("the session was opened without the member key");
    try {
      this.mod.C_SignInit(this.session, { mechanism: constant(this.b, "CKM_ECDSA") }, this.privateKey);
      const out = this.mod.C_Sign(this.session, Buffer.from(hash), Buffer.alloc(128));
      return new Uint8Array(out);
    } catch (err) {
      throw tokenFailure("signing", err);
    }
  }

  /** Objects of `cls` labelled `label` (CKO_PRIVATE_KEY, CKO_PUBLIC_KEY). */
  find(cls: "CKO_PRIVATE_KEY" | "CKO_PUBLIC_KEY", label: string): Handle[] {
    return findObjects(this.mod, this.session, [
      { type: constant(this.b, "CKA_CLASS"), value: constant(this.b, cls) },
      { type: constant(this.b, "CKA_LABEL"), value: label },
    ]);
  }

  /**
   * Generates a secp256k1 key pair inside the token, labelled `label` (both halves), the private
   * half sensitive and not extractable. Returns its public point's address.
   */
  generateKeyPair(label: string): TokenKey {
    const b = this.b;
    const a = (name: string): number => constant(b, name);
    const id = Buffer.from(label, "utf8");
    const pub: Attribute[] = [
      { type: a("CKA_TOKEN"), value: true },
      { type: a("CKA_LABEL"), value: label },
      { type: a("CKA_ID"), value: id },
      { type: a("CKA_VERIFY"), value: true },
      { type: a("CKA_EC_PARAMS"), value: Buffer.from([0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x0a]) },
    ];
    const priv: Attribute[] = [
      { type: a("CKA_TOKEN"), value: true },
      { type: a("CKA_PRIVATE"), value: true },
      { type: a("CKA_LABEL"), value: label },
      { type: a("CKA_ID"), value: id },
      { type: a("CKA_SIGN"), value: true },
      { type: a("CKA_SENSITIVE"), value: true },
      { type: a("CKA_EXTRACTABLE"), value: false },
    ];
    let pair: { publicKey: Handle; privateKey: Handle };
    try {
      pair = this.mod.C_GenerateKeyPair(this.session, { mechanism: a("CKM_EC_KEY_PAIR_GEN") }, pub, priv);
    } catch (err) {
      throw tokenFailure("generating a secp256k1 key pair", err);
    }
    return readPublicKey(b, this.mod, this.session, pair.publicKey, label);
  }

  /** The boolean attributes that keep a private key inside the token. */
  privateKeyFlags(handle: Handle): { sensitive: boolean; extractable: boolean; token: boolean } {
    const a = (name: string): number => constant(this.b, name);
    const [s, e, t] = this.mod.C_GetAttributeValue(this.session, handle, [
      { type: a("CKA_SENSITIVE") },
      { type: a("CKA_EXTRACTABLE") },
      { type: a("CKA_TOKEN") },
    ]);
    const bool = (x: Attribute | undefined): boolean => Buffer.isBuffer(x?.value) && x.value[0] === 1;
    return { sensitive: bool(s), extractable: bool(e), token: bool(t) };
  }

  close(): void {
    closeQuietly(() => this.mod.C_CloseSession(this.session));
    finalize(this.mod);
  }
}

/** A CK_ULONG attribute (native byte order: little-endian on the platforms dacd runs on). */
function ulong(value: Buffer): number {
  return value.length >= 4 ? value.readUInt32LE(0) : -1;
}

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split("\n")[0] ?? "";
}

function closeQuietly(f: () => void): void {
  try {
    f();
  } catch {
    // Closing a session of a token that is gone fails too; nothing more to release.
  }
}

function initialize(mod: Pkcs11Module): void {
  try {
    mod.C_Initialize();
  } catch (err) {
    // A library left initialised by a session abandoned after a hung call is usable as it is.
    if (pkcs11Code(err) !== "CKR_CRYPTOKI_ALREADY_INITIALIZED") throw tokenFailure("C_Initialize", err);
  }
}

function finalize(mod: Pkcs11Module): void {
  closeQuietly(() => mod.C_Finalize());
  closeQuietly(() => mod.close());
}

function findSlot(mod: Pkcs11Module, spec: TokenSpec): Handle {
  let slots: Handle[];
  try {
    slots = mod.C_GetSlotList(true);
  } catch (err) {
    throw tokenFailure("listing the slots", err);
  }
  for (const slot of slots) {
    let label: string;
    try {
      label = mod.C_GetTokenInfo(slot).label.trimEnd();
    } catch {
      continue;
    }
    if (label === spec.tokenLabel) return slot;
  }
  throw new DacdError(
    "CONFIG",
    `no token labelled ${JSON.stringify(spec.tokenLabel)} in ${spec.module} (pkcs11_token_label; ${slots.length} token(s) present)`,
  );
}

function login(b: Pkcs11Binding, mod: Pkcs11Module, session: Handle, spec: TokenSpec): void {
  try {
    mod.C_Login(session, constant(b, "CKU_USER"), spec.pin);
  } catch (err) {
    const code = pkcs11Code(err);
    // Another session of this process may have logged the token in already: that is enough.
    if (code === "CKR_USER_ALREADY_LOGGED_IN") return;
    if (code && PIN_ERRORS.includes(code))
      throw new DacdError(
        "CONFIG",
        `the PIN for token ${JSON.stringify(spec.tokenLabel)} is refused (${code}): check pkcs11_pin_path`,
      );
    throw tokenFailure(`logging in to token ${JSON.stringify(spec.tokenLabel)}`, err);
  }
}

function findObjects(mod: Pkcs11Module, session: Handle, template: Attribute[]): Handle[] {
  try {
    mod.C_FindObjectsInit(session, template);
    try {
      return mod.C_FindObjects(session, 16);
    } finally {
      mod.C_FindObjectsFinal(session);
    }
  } catch (err) {
    throw tokenFailure("searching the token", err);
  }
}

function findMemberKey(
  b: Pkcs11Binding,
  mod: Pkcs11Module,
  session: Handle,
  spec: TokenSpec,
): { handle: Handle; key: TokenKey } {
  const a = (name: string): number => constant(b, name);
  const label = spec.keyLabel;
  const where = `in token ${JSON.stringify(spec.tokenLabel)}`;
  const privs = findObjects(mod, session, [
    { type: a("CKA_CLASS"), value: a("CKO_PRIVATE_KEY") },
    { type: a("CKA_LABEL"), value: label },
  ]);
  if (privs.length === 0)
    throw new DacdError(
      "CONFIG",
      `no private key labelled ${JSON.stringify(label)} ${where} (pkcs11_key_label)`,
    );
  if (privs.length > 1)
    throw new DacdError(
      "CONFIG",
      `${privs.length} private keys are labelled ${JSON.stringify(label)} ${where}: the member key must be one`,
    );
  const handle = privs[0]!;
  const [keyType, params] = mod.C_GetAttributeValue(session, handle, [
    { type: a("CKA_KEY_TYPE") },
    { type: a("CKA_EC_PARAMS") },
  ]);
  if (!Buffer.isBuffer(keyType?.value) || ulong(keyType.value) !== a("CKK_EC"))
    throw new DacdError("CONFIG", `the token key ${JSON.stringify(label)} is not an EC key`);
  if (Buffer.isBuffer(params?.value)) checkSecp256k1Params(params.value, label);
  // The public half: same label, else same CKA_ID (tools often label only one half).
  let pubs = findObjects(mod, session, [
    { type: a("CKA_CLASS"), value: a("CKO_PUBLIC_KEY") },
    { type: a("CKA_LABEL"), value: label },
  ]);
  if (pubs.length !== 1) {
    const [id] = mod.C_GetAttributeValue(session, handle, [{ type: a("CKA_ID") }]);
    pubs =
      Buffer.isBuffer(id?.value) && id.value.length > 0
        ? findObjects(mod, session, [
            { type: a("CKA_CLASS"), value: a("CKO_PUBLIC_KEY") },
            { type: a("CKA_ID"), value: id.value },
          ])
        : [];
  }
  if (pubs.length !== 1)
    throw new DacdError(
      "CONFIG",
      `no single public key for ${JSON.stringify(label)} ${where} (same CKA_LABEL or CKA_ID): the member address cannot be derived`,
    );
  return { handle, key: readPublicKey(b, mod, session, pubs[0]!, label) };
}

function readPublicKey(
  b: Pkcs11Binding,
  mod: Pkcs11Module,
  session: Handle,
  handle: Handle,
  label: string,
): TokenKey {
  let attrs: Attribute[];
  try {
    attrs = mod.C_GetAttributeValue(session, handle, [
      { type: constant(b, "CKA_EC_PARAMS") },
      { type: constant(b, "CKA_EC_POINT") },
    ]);
  } catch (err) {
    throw tokenFailure(`reading the public key ${JSON.stringify(label)}`, err);
  }
  const [params, point] = attrs;
  if (!Buffer.isBuffer(params?.value) || !Buffer.isBuffer(point?.value))
    throw new DacdError("CONFIG", `the token key ${JSON.stringify(label)} has no EC parameters or point`);
  checkSecp256k1Params(params.value, label);
  const uncompressed = unwrapEcPoint(point.value, label);
  return { point: uncompressed, address: addressOfPoint(uncompressed) };
}
