import { decodeErrorResult, type Hex } from "viem";

/**
 * A reverted call's reason in words: the contract's revert string (StarkEx's contracts revert with
 * strings such as ESCAPE_ALREADY_USED) and what it means for the user.
 */

const MEANINGS: Record<string, string> = {
  ESCAPE_ALREADY_USED: "this vault or position has already escaped; its balance waits in withdraw",
  ESCAPE_LACKS_PROOF:
    "the escape verifier has no record of this proof: send verifyEscape first, with the proof of the frozen batch",
  FULL_WITHDRAWAL_UNREQUESTED: "no forced withdrawal request is pending for it: send the request first",
  FORCED_ACTION_UNREQUESTED: "no forced withdrawal request is pending for it: send the request first",
  FULL_WITHDRAWAL_PENDING: "the grace period after the request has not ended yet",
  FORCED_ACTION_PENDING: "the grace period after the request has not ended yet",
  REQUEST_ALREADY_PENDING: "a request for it is already pending: wait for the grace period to end",
  STATE_IS_FROZEN: "the exchange is already frozen: go on with verifyEscape and escape",
  STATE_NOT_FROZEN: "the exchange is not frozen yet: a freeze request must succeed first",
  USER_UNREGISTERED: "the stark key has no Ethereum address registered on the exchange",
  MISMATCHING_STARK_ETH_KEYS: "only the Ethereum address registered to this key may send it",
  "Bad Merkle path":
    "the proof does not hash to the root it names: the file is damaged or not a proof of this exchange",
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
