/** The hashes an on-chain proof spells out that a dacd proof leaves implicit. */
import type { HashEngine } from "../../verifier/hash/engine.js";
import { bigintToBytes32, bytesToBigint } from "../../util/bytes.js";

/** H(x, y) for one pair. */
export async function pedersen(engine: HashEngine, x: bigint, y: bigint): Promise<bigint> {
  return bytesToBigint(await engine.hashMany(bigintToBytes32(x), bigintToBytes32(y)));
}

/** The nodes on a leaf's path, from the leaf hash (nodes[0]) to the root (nodes[height]). */
export async function pathNodes(
  engine: HashEngine,
  leafHash: bigint,
  siblings: readonly bigint[],
  index: bigint,
): Promise<bigint[]> {
  const nodes = [leafHash];
  for (let k = 0; k < siblings.length; k++) {
    const node = nodes[k]!;
    const sibling = siblings[k]!;
    const right = ((index >> BigInt(k)) & 1n) === 1n;
    nodes.push(await (right ? pedersen(engine, sibling, node) : pedersen(engine, node, sibling)));
  }
  return nodes;
}

/** A Pedersen hash chain from 0: states[0] = 0, states[i + 1] = H(states[i], values[i]). */
export async function hashChain(engine: HashEngine, values: readonly bigint[]): Promise<bigint[]> {
  const states = [0n];
  for (const v of values) states.push(await pedersen(engine, states[states.length - 1]!, v));
  return states;
}
