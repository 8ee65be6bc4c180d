import type { NodeSource, NodeWrite } from "./records/node-source.js";

/**
 * Nodes kept in memory: for tests (a cross-check of the LevelDB store) and the devnet operator.
 * Keys are hex strings because Map compares Uint8Array keys by identity. Nothing is ever deleted,
 * so a node is found by its hash alone: every copy of it (one per batch that wrote it) describes
 * the same subtree, and every child any copy names is here too.
 */
export class MemoryNodeStore implements NodeSource {
  private readonly nodes = new Map<string, Uint8Array>();

  getNodes(hashes: readonly Uint8Array[], _gens?: ArrayLike<number>): Promise<(Uint8Array | undefined)[]> {
    return Promise.resolve(hashes.map((h) => this.nodes.get(Buffer.from(h).toString("hex"))));
  }

  putNodes(writes: Iterable<NodeWrite>): void {
    for (const w of writes) this.nodes.set(Buffer.from(w.hash).toString("hex"), w.record);
  }

  get size(): number {
    return this.nodes.size;
  }
}
