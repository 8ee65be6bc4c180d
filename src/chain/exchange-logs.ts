/**
 * What the watch takes of an eth_getLogs answer, checked strictly: the provider's filter is not
 * trusted, so a log counts only if the exchange itself emitted it (its address) and it has exactly
 * the shape of one of the watched events (one topic, since no argument is indexed, and 32 bytes of
 * data per argument). viem's decoding accepts extra topics and data; this does not.
 */
import { toEventSelector } from "viem";
import { MalformedAnswer } from "./rpc.js";
import { WATCHED_EVENTS } from "./exchange-abi.js";

/** Why the watch refused something the base chain's endpoint answered (counted and logged). */
export const ONCHAIN_REJECTIONS = [
  "foreign_address", // a log from another contract than starkex_contract_address
  "malformed_log", // a log of a watched event with extra topics or data
  "out_of_range", // a batch id or sequence number no exchange can have reached (far beyond the newest)
  "freeze_unconfirmed", // a LogFrozen that isFrozen() at a confirmed block denies
] as const;
export type OnchainRejection = (typeof ONCHAIN_REJECTIONS)[number];

/** Each watched event's topic 0 → the data bytes its arguments take (the ABI indexes none). */
const DATA_BYTES = new Map<string, number>(
  WATCHED_EVENTS.map((e) => [toEventSelector(e), 32 * e.inputs.length]),
);

/** The fields of a log the watch relies on (as viem formats them). */
export interface RawLog {
  readonly address: string;
  readonly topics: readonly (string | null)[];
  readonly data: string;
  readonly blockNumber: bigint | null;
  readonly logIndex: number | null;
  readonly transactionHash: string | null;
}

/**
 * Throws MalformedAnswer for a log without a block, index or transaction (the answer as a whole
 * is broken: an RPC failure); returns why a log is refused, or undefined for an exchange's log.
 */
export function checkLog(log: RawLog, exchange: string): OnchainRejection | undefined {
  if (
    typeof log.blockNumber !== "bigint" ||
    typeof log.logIndex !== "number" ||
    typeof log.transactionHash !== "string"
  )
    throw new MalformedAnswer("eth_getLogs answered a log without its block number, index or transaction");
  if (typeof log.address !== "string" || log.address.toLowerCase() !== exchange) return "foreign_address";
  const bytes = DATA_BYTES.get(String(log.topics[0]).toLowerCase());
  if (bytes === undefined || log.topics.length !== 1 || (log.data.length - 2) / 2 !== bytes)
    return "malformed_log";
  return undefined;
}
