/** The messages between pkcs11-signer.ts and its worker (token-worker.ts). */
import type { DacdErrorData } from "../../errors.js";
import type { TokenSpec } from "./token.js";

export type TokenCall =
  | { readonly op: "open"; readonly spec: TokenSpec }
  | { readonly op: "sign"; readonly hash: Uint8Array }
  | { readonly op: "close" };

export type TokenRequest = TokenCall & { readonly id: number };

export type TokenReply =
  | { readonly id: number; readonly error: DacdErrorData }
  | { readonly id: number; readonly point: Uint8Array; readonly address: string }
  | { readonly id: number; readonly raw: Uint8Array }
  | { readonly id: number };
