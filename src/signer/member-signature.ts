/**
 * Whether a signature found outside the signer (in the claims journal, in a copy of it) was made by
 * the member key over a claim: an Ethereum-kind member key (a 20-byte address) takes only a 65-byte
 * secp256k1 signature that recovers to it, a Starknet-kind one (a STARK key) only an {r, s} that
 * verifies under it. A token's (PKCS#11) signatures are secp256k1 like a key file's, so this holds
 * for every signer kind.
 */
import { hexToBytes32 } from "../util/bytes.js";
import { recoverAddress } from "./eth-signer.js";
import type { PostedSignature } from "./signer.js";
import { verifyStarkSignature } from "./stark-signer.js";

const ETH_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** Why `signature` is not the member's signature of `claimHash` (0x + 64 hex), or undefined if it is. */
export function memberSignatureProblem(
  claimHash: string,
  signature: PostedSignature,
  memberKey: string,
): string | undefined {
  const claim = /^0x[0-9a-fA-F]{64}$/.test(claimHash) ? hexToBytes32(claimHash) : null;
  if (!claim) return `claim ${JSON.stringify(claimHash)} is not a 32-byte hash`;
  if (ETH_ADDRESS.test(memberKey)) {
    if (typeof signature !== "string")
      return `a STARK-form signature {r, s}, but member ${memberKey} signs with secp256k1`;
    let signer: string;
    try {
      signer = recoverAddress(claim, signature);
    } catch (err) {
      return `the signature is malformed (${(err as Error).message})`;
    }
    return signer.toLowerCase() === memberKey.toLowerCase()
      ? undefined
      : `the signature recovers to ${signer}, not to member ${memberKey}`;
  }
  if (typeof signature === "string")
    return `a secp256k1-form signature, but member ${memberKey} signs with a STARK key`;
  if (typeof signature !== "object" || signature === null || typeof signature.r !== "string")
    return "the signature is malformed";
  return verifyStarkSignature(claim, signature, memberKey)
    ? undefined
    : `the signature does not verify under member key ${memberKey}`;
}
