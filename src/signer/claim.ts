import { keccak_256 } from "@noble/hashes/sha3.js";
import { bigintToBytes32, concatBytes } from "../util/bytes.js";
import type { Roots } from "../model/profile.js";
import type { Profile } from "../model/profile.js";

/**
 * The availability claim (docs/algorithms.md, From an update to a claim): keccak256 of Solidity's packed encoding of
 * (bytes32 main_root, uint256 main_height, bytes32 order_root, uint256 order_height,
 * uint256 sequence_number). The rollup tree is not part of the claim.
 */
export function claimHash(
  mainRoot: Uint8Array,
  mainHeight: number,
  orderRoot: Uint8Array,
  orderHeight: number,
  sequenceNumber: number,
): Uint8Array {
  if (!Number.isSafeInteger(sequenceNumber) || sequenceNumber < 0) {
    throw new RangeError(`sequence number must be a non-negative integer, got ${sequenceNumber}`);
  }
  return keccak_256(
    concatBytes(
      mainRoot,
      bigintToBytes32(BigInt(mainHeight)),
      orderRoot,
      bigintToBytes32(BigInt(orderHeight)),
      bigintToBytes32(BigInt(sequenceNumber)),
    ),
  );
}

/** The claim for a batch of this profile from its roots. */
export function computeClaimHash(profile: Profile, roots: Roots, sequenceNumber: number): Uint8Array {
  const main = roots[profile.main.name];
  const order = roots[profile.order.name];
  if (!main || !order)
    throw new Error(`roots of ${profile.main.name} and ${profile.order.name} are needed for the claim`);
  return claimHash(main, profile.main.height, order, profile.order.height, sequenceNumber);
}
