/**
 * How trees read the nodes they did not compute in this batch. Nodes are content-addressed: the key
 * is the node's 32-byte hash, the record its children — `left ‖ right` (64 bytes) for a Merkle or
 * Patricia binary node, `bottom ‖ path ‖ length` (32 + 32 + 1 bytes) for a Patricia edge.
 */
export interface NodeSource {
  /** Looks up many nodes in one round trip; `undefined` where a node is unknown. */
  getNodes(hashes: readonly Uint8Array[]): Promise<(Uint8Array | undefined)[]>;
}

/** A node record to be stored under its hash. */
export interface NodeWrite {
  readonly hash: Uint8Array;
  readonly record: Uint8Array;
}
