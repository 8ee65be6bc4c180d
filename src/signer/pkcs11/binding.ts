/**
 * The PKCS#11 binding (pkcs11js, an optional dependency: it compiles at install, and a member
 * with a file key needs no compiler for it). Loaded only when `signer: pkcs11` asks for it; the
 * subset dacd calls is typed here so that the build does not need the package installed.
 */
import { createRequire } from "node:module";
import { DacdError } from "../../errors.js";

export type Handle = Buffer;

export interface Attribute {
  type: number;
  value?: number | boolean | string | Buffer;
}

export interface Pkcs11Module {
  load(path: string): void;
  C_Initialize(): void;
  C_Finalize(): void;
  close(): void;
  C_GetSlotList(tokenPresent?: boolean): Handle[];
  C_GetTokenInfo(slot: Handle): { label: string };
  C_OpenSession(slot: Handle, flags: number): Handle;
  C_CloseSession(session: Handle): void;
  C_Login(session: Handle, userType: number, pin?: string): void;
  C_FindObjectsInit(session: Handle, template: Attribute[]): void;
  C_FindObjects(session: Handle, maxObjectCount: number): Handle[];
  C_FindObjectsFinal(session: Handle): void;
  C_GetAttributeValue(session: Handle, object: Handle, template: Attribute[]): Attribute[];
  C_SignInit(session: Handle, mechanism: { mechanism: number }, key: Handle): void;
  C_Sign(session: Handle, data: Buffer, out: Buffer): Buffer;
  C_GenerateKeyPair(
    session: Handle,
    mechanism: { mechanism: number },
    publicTemplate: Attribute[],
    privateTemplate: Attribute[],
  ): { publicKey: Handle; privateKey: Handle };
}

/** The package's exports: the module class and the PKCS#11 constants (CKA_*, CKR_*, …). */
export interface Pkcs11Binding {
  PKCS11: new () => Pkcs11Module;
  [constant: string]: unknown;
}

export const PKCS11_PACKAGE = "pkcs11js";

/** How to add the binding, said whenever it is missing. */
export const INSTALL_HINT =
  `signer: pkcs11 needs the optional package ${PKCS11_PACKAGE}, which is not installed: ` +
  `run \`npm install ${PKCS11_PACKAGE}\` in dacd's directory (it compiles: needs python3, make and a C++ compiler)`;

/** The binding, or a one-line CONFIG error saying how to install it. */
export function loadBinding(): Pkcs11Binding {
  // CommonJS package with a native addon: loaded by require, on demand.
  const require = createRequire(import.meta.url);
  try {
    return require(PKCS11_PACKAGE) as Pkcs11Binding;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "MODULE_NOT_FOUND" || code === "ERR_DLOPEN_FAILED")
      throw new DacdError("CONFIG", INSTALL_HINT);
    throw err;
  }
}

/** A numeric constant of the binding (CKA_LABEL, CKR_PIN_INCORRECT, …). */
export function constant(b: Pkcs11Binding, name: string): number {
  const v = b[name];
  if (typeof v !== "number") throw new Error(`${PKCS11_PACKAGE} has no constant ${name}`);
  return v;
}
