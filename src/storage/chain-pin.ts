/**
 * The base chain's kind decides the signature scheme (secp256k1 for Ethereum-kind chains, the STARK
 * curve for Starknet). It is fixed once, at the member's first start, and never follows the gateway
 * afterwards: a gateway that could switch it would make the member sign with its key on another
 * curve. The pin is, in order: the configuration's `chain`, the store's record, the kind of the
 * signatures in the claims journal (which outlives a lost store); only a member with none of them
 * takes the gateway's answer, and records it.
 */
import { DacdError } from "../errors.js";

export type ChainKind = "ethereum" | "starknet";

/** Where the pin is kept: the store's meta records (store.meta). */
export interface ChainPinStore {
  pinnedChain(): Promise<string | undefined>;
  pinChain(kind: ChainKind): Promise<void>;
}

export async function resolveChainKind(
  store: ChainPinStore,
  sources: {
    readonly configured?: ChainKind;
    readonly journal?: ChainKind;
    /** What the gateway answers to get_blockchain_type. */
    readonly gateway: ChainKind;
  },
): Promise<ChainKind> {
  const stored = await store.pinnedChain();
  if (stored !== undefined && stored !== "ethereum" && stored !== "starknet")
    throw new DacdError("STORE", `the store pins an unknown chain kind ${JSON.stringify(stored)}`);
  const pins: [string, ChainKind | undefined][] = [
    ["the configuration's chain", sources.configured],
    ["the store", stored as ChainKind | undefined],
    ["the signatures in the claims journal", sources.journal],
  ];
  const [pinnedBy, pinned] = pins.find(([, kind]) => kind !== undefined) ?? ["", undefined];
  for (const [by, kind] of pins) {
    if (kind !== undefined && pinned !== undefined && kind !== pinned)
      throw new DacdError(
        "CONFIG",
        `chain kind conflict: ${pinnedBy} says ${pinned}, ${by} says ${kind}; set chain in the configuration to the one this member has signed for`,
      );
  }
  if (pinned !== undefined && sources.gateway !== pinned) {
    throw new DacdError(
      "CONFIG",
      `the availability gateway now reports a ${sources.gateway} chain, but this member signs for a ${pinned} chain (pinned by ${pinnedBy}); ` +
        "refusing to switch signature schemes on the gateway's word. If the chain really changed, start a new member with its own data_dir and key",
    );
  }
  const kind = pinned ?? sources.gateway;
  if (stored === undefined) await store.pinChain(kind);
  return kind;
}
