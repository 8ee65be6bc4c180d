/**
 * The one place the devnet imports dacd's shared verifier, storage and signer code from, so the
 * devnet's batches are checked with exactly the code a member runs.
 */
export { computeRoots } from "../verifier/trees/update/compute-roots.js";
export type { Roots } from "../verifier/trees/update/compute-roots.js";
export { MemoryNodeStore } from "../storage/memory-store.js";
export { computeClaimHash } from "../signer/claim.js";
export { EthSigner, recoverAddress, toChecksumAddress } from "../signer/eth-signer.js";
export { WasmEngine } from "../verifier/hash/wasm-engine.js";
export type { HashEngine } from "../verifier/hash/engine.js";
export { FIELD_PRIME } from "../model/field.js";
export { makeProfile, keptTrees, TREE_NAMES, TREES } from "../model/profile.js";
export type { Profile, ProfileName, TreeName, TreeSpec } from "../model/profile.js";
export type { LeafChanges, PositionLeaf, PositionAsset, VaultLeaf } from "../model/state-update.js";
