import type { NativeCacheLink, NodeSource, PackedNodes } from "../../../storage/records/node-source.js";
import type { NodeWrites } from "../../../storage/records/node-writes.js";

/** What one tree's update did in one batch, for `dacd run --debug`. */
export interface TreeStats {
  /** Changed leaves applied. */
  leaves: number;
  /** Node records looked up (found in the top-level cache or read from the store). */
  nodes_read: number;
  /** New node records written (stored under their hashes with the batch). */
  nodes_written: number;
  /** From the tree's start to its root; the trees of a batch run concurrently, so these overlap. */
  ms: number;
}

/**
 * A view of `nodes` that counts the records one tree asks for. The count is one addition per call
 * (per batch of lookups), so it is kept for every batch, not only under --debug.
 */
export function countingSource(nodes: NodeSource, stats: TreeStats): NodeSource {
  const view: NodeSource = {
    rememberedLevels: nodes.rememberedLevels,
    ...(nodes.rememberedTop && { rememberedTop: nodes.rememberedTop.bind(nodes) }),
    getNodes: (hashes, gens) => {
      stats.nodes_read += hashes.length;
      return nodes.getNodes(hashes, gens);
    },
    ...(nodes.nativeCache && { nativeCache: countingLink(nodes.nativeCache, stats) }),
  };
  if (nodes.getCached) {
    const getCached = nodes.getCached.bind(nodes);
    view.getCached = (hash, gen) => {
      const hit = getCached(hash, gen);
      if (hit) stats.nodes_read++;
      return hit;
    };
  }
  if (nodes.remember) view.remember = nodes.remember.bind(nodes);
  if (nodes.rememberPacked) view.rememberPacked = nodes.rememberPacked.bind(nodes);
  if (nodes.getPacked) {
    const getPacked = nodes.getPacked.bind(nodes);
    view.getPacked = (tree, hashes, positions, gens): Promise<PackedNodes> => {
      stats.nodes_read += hashes.length / 32;
      return getPacked(tree, hashes, positions, gens);
    };
  }
  return view;
}

/** A view of a native cache link that counts the records one tree's walk reads through it. */
function countingLink(link: NativeCacheLink, stats: TreeStats): NativeCacheLink {
  return {
    handle: link.handle,
    treeId: (tree) => link.treeId(tree),
    readStore: (hashes, gens) => {
      stats.nodes_read += hashes.length;
      return link.readStore(hashes, gens);
    },
    noteHits: (count) => {
      stats.nodes_read += count;
      link.noteHits?.(count);
    },
  };
}

/**
 * A view of the batch's shared list of new nodes that counts what one tree adds. It inherits
 * everything else from the list (reads see the shared contents); only the two ways to add are
 * wrapped, and they add to the shared list itself.
 */
export function countingWrites(writes: NodeWrites, stats: TreeStats): NodeWrites {
  const view = Object.create(writes) as NodeWrites;
  view.add = (hash, hashOff, record, recordOff, recordLength) => {
    stats.nodes_written++;
    writes.add(hash, hashOff, record, recordOff, recordLength);
  };
  view.addAll = (hashes, records, lengths) => {
    stats.nodes_written += lengths.length;
    writes.addAll(hashes, records, lengths);
  };
  return view;
}
