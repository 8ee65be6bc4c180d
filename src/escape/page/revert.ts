import { decodeErrorResult, type Hex } from "viem";

/**
 * A reverted call's reason in words: the contract's revert string (StarkEx's contracts revert with
 * strings such as ESCAPE_ALREADY_USED) and what it means for the user.
 */

const MEANINGS: Record<string, string> = {
  ESCAPE_ALREADY_USED: "this vault or position has already escaped; its balance waits in withdraw",
  FULL_WITHDRAWAL_UNREQUESTED: "no forced withdrawal request is pending for it: send the request first",
  FORCED_WITHDRAWAL_UNREQUESTED: "no forced withdrawal request is pending for it: send the request first",
  FULL_WITHDRAWAL_PENDING: "the grace period after the request has not ended yet",
  FORCED_WITHDRAWAL_PENDING: "the grace period after the request has not ended yet",
  FORCED_ACTION_PENDING: "the grace period after the request has not ended yet",
  STATE_IS_FROZEN: "the exchange is already frozen: go on with verifyEscape and escape",
  STATE_NOT_FROZEN: "the exchange is not frozen yet: a freeze request must succeed first",
  ESCAPE_NOT_VERIFIED: "verifyEscape has not been sent (or failed) for this proof",
  ESCAPE_PROOF_NOT_REGISTERED: "verifyEscape has not been sent (or failed) for this proof",
  INVALID_MERKLE_ROOT: "the proof's root is not the exchange's frozen root: it is for another batch",
  INVALID_ROOT: "the proof's root is not the exchange's frozen root: it is for another batch",
  USER_UNREGISTERED: "the stark key has no Ethereum address registered on the exchange",
  NOT_FROZEN: "the exchange is not frozen yet",
  ONLY_KEY_OWNER: "only the Ethereum address registered to this key may send it",
  MISMATCHING_STARK_ETH_KEYS: "only the Ethereum address registered to this key may send it",
};

/** The revert string in the error data (Error(string)), or null. */
export function revertString(data: unknown): string | null {
  if (typeof data !== "string" || !/^0x[0-9a-fA-F]{8}/.test(data)) return null;
  try {
    const e = decodeErrorResult({ data: data as Hex });
    if (e.errorName === "Error") return String(e.args?.[0] ?? "");
    if (e.errorName === "Panic") return `panic ${String(e.args?.[0] ?? "")}`;
  } catch {
    return null;
  }
  return null;
}

/** The revert data in an EIP-1193 error, wherever the wallet put it. */
export function errorData(err: unknown): unknown {
  let e = err as { data?: unknown; cause?: unknown; error?: unknown } | null;
  for (let i = 0; i < 4 && e && typeof e === "object"; i++) {
    if (typeof e.data === "string") return e.data;
    if (e.data && typeof e.data === "object" && typeof (e.data as { data?: unknown }).data === "string")
      return (e.data as { data: string }).data;
    e = (e.error ?? e.cause ?? null) as typeof e;
  }
  return null;
}

/** "REASON: meaning" for a revert, else the wallet's own message. */
export function revertInWords(err: unknown): string {
  const reason = revertString(errorData(err));
  const msg = (err as { message?: string } | null)?.message ?? String(err);
  const text = reason ?? /reverted with reason string '([^']+)'/.exec(msg)?.[1] ?? null;
  if (text === null) return msg;
  const meaning = MEANINGS[text];
  return meaning ? `${text}: ${meaning}` : text;
}
