/** The member's signature as it is posted: a hex string (Ethereum-kind chain) or an {r, s} object (Starknet-kind). */
export type PostedSignature = string | { r: string; s: string };

/**
 * Signs 32-byte claim hashes with the member key. Implementations never expose the private key
 * (no getter, no toJSON) so it cannot end up in a log line by accident.
 */
export interface Signer {
  /** Which base-chain kind this signer fits: "ethereum" (secp256k1) or "starknet" (STARK curve). */
  readonly chainKind: "ethereum" | "starknet";
  /** The identity posted as `member_key`: a checksummed address, or a STARK public key in hex. */
  readonly memberKey: string;
  /** Where the key is: read from a file into this process, or kept in a PKCS#11 token. */
  readonly custody?: "file" | "pkcs11";
  /** Synchronous for a key in memory; a token answers later (and may fail: a SIGNER error). */
  sign(claimHash: Uint8Array): PostedSignature | Promise<PostedSignature>;
  /** Releases what the signer holds open (a token session). */
  close?(): Promise<void>;
}
