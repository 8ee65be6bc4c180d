import { describe, expect, it } from "vitest";
import { prng } from "../../src/util/prng.js";
import { bigintToBytes32, bytesToBigint, toHex64 } from "../../src/util/bytes.js";
import { buildMerkle, buildPatricia } from "../../src/verifier/trees/bulk/bulk-build.js";
import { emptyRoots } from "../../src/verifier/trees/update/compute-roots.js";
import type { NodeSource, NodeWrite } from "../../src/storage/records/node-source.js";
import { updateMerkle, updatePatricia } from "../../src/verifier/trees/update/update-tree.js";
import { naiveMerkleRoot, naivePatriciaRoot } from "../helpers/naive-trees.js";
import { engine, randomBig } from "../helpers/chain-store.js";

function pack(entries: [bigint, bigint][]): { ids: bigint[]; hashes: Uint8Array } {
  const sorted = [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const hashes = new Uint8Array(sorted.length * 32);
  sorted.forEach(([, v], i) => hashes.set(bigintToBytes32(v), i * 32));
  return { ids: sorted.map(([id]) => id), hashes };
}

/** The gen the bulk builds write under (a load's batch), and the next batch's. */
const LOAD_GEN = 4;
const NEXT_GEN = 5;

/** Node records under their gen and hash, as the store keys them. */
class MemNodes implements NodeSource {
  /** hash → record, of the records written under LOAD_GEN. */
  readonly map = new Map<string, Uint8Array>();
  private readonly all = new Map<string, Uint8Array>();
  add = (nodes: Iterable<NodeWrite>, gen = LOAD_GEN): void => {
    for (const n of nodes) {
      if (gen === LOAD_GEN) this.map.set(toHex64(n.hash), n.record.slice());
      this.all.set(`${gen}/${toHex64(n.hash)}`, n.record.slice());
    }
  };
  getNodes(hashes: readonly Uint8Array[], gens: ArrayLike<number>): Promise<(Uint8Array | undefined)[]> {
    return Promise.resolve(hashes.map((h, i) => this.all.get(`${gens[i]}/${toHex64(h)}`)));
  }
}

/** Records as text, by hash. */
const recordsOf = (m: ReadonlyMap<string, Uint8Array>): Map<string, string> =>
  new Map([...m].map(([k, v]) => [k, Buffer.from(v).toString("hex")]));

const leafSets: [string, number, number][] = [
  ["none", 0, 0],
  ["one", 1, 0],
  ["two", 2, 0],
  ["few", 7, 1],
  ["many", 60, 2],
];

describe("bulk Merkle build", () => {
  it.each(leafSets)("equals the naive root and the incremental update (%s)", async (_name, n, seed) => {
    const height = 10;
    const r = prng(seed + 11);
    const leaves = new Map<bigint, bigint>();
    while (leaves.size < n) leaves.set(BigInt(Math.floor(r() * 1024)), randomBig(r, 240) + 1n);
    if (n === 2) leaves.set(1023n, 5n); // the last id
    const empty = await emptyRoots(engine, "order", height);
    const nodes = new MemNodes();
    const root = await buildMerkle(engine, empty, pack([...leaves]), nodes.add, {
      sinkChunk: 3,
      engineChunk: 5,
      gen: LOAD_GEN,
    });
    expect(bytesToBigint(root)).toBe(naiveMerkleRoot(height, leaves, 0n));
    // Incremental update from the empty tree, under the same gen, gives the same root and the same
    // records, byte for byte (the children's gens included).
    const inc = await updateMerkle(
      engine,
      new MemNodes(),
      empty,
      empty[height]!,
      0,
      LOAD_GEN,
      new Map([...leaves].map(([k, v]) => [k, bigintToBytes32(v)])),
      "t",
    );
    expect(toHex64(inc.root)).toBe(toHex64(root));
    expect(inc.rootGen).toBe(n > 0 ? LOAD_GEN : 0);
    expect(recordsOf(new Map([...inc.newNodes].map((w) => [toHex64(w.hash), w.record])))).toEqual(
      recordsOf(nodes.map),
    );
    // The stored nodes carry further incremental updates.
    if (n > 0) {
      const change = new Map([[[...leaves.keys()][0]!, bigintToBytes32(77n)]]);
      const next = await updateMerkle(engine, nodes, empty, root, LOAD_GEN, NEXT_GEN, change, "t");
      expect(next.rootGen).toBe(NEXT_GEN);
      const want = new Map(leaves).set([...leaves.keys()][0]!, 77n);
      expect(bytesToBigint(next.root)).toBe(naiveMerkleRoot(height, want, 0n));
    }
  });
});

describe("bulk Patricia build", () => {
  it.each([...leafSets, ["dense", 40, 3] as [string, number, number]])(
    "equals the naive root and carries incremental updates (%s)",
    async (name, n, seed) => {
      const height = 251;
      const r = prng(seed + 7);
      const leaves = new Map<bigint, bigint>();
      while (leaves.size < n) {
        const id = name === "dense" ? BigInt(Math.floor(r() * 64)) : randomBig(r, 251);
        leaves.set(id, randomBig(r, 64) + 1n);
      }
      if (name === "two") {
        leaves.clear();
        leaves.set(0n, 3n);
        leaves.set((1n << 251n) - 1n, 4n);
      }
      const nodes = new MemNodes();
      const root = await buildPatricia(engine, height, pack([...leaves]), nodes.add, {
        sinkChunk: 2,
        gen: LOAD_GEN,
      });
      expect(bytesToBigint(root)).toBe(naivePatriciaRoot(height, leaves));
      const inc = await updatePatricia(
        engine,
        new MemNodes(),
        height,
        new Uint8Array(32),
        0,
        LOAD_GEN,
        new Map([...leaves].map(([k, v]) => [k, bigintToBytes32(v)])),
        "t",
      );
      expect(toHex64(inc.root)).toBe(toHex64(root));
      expect(inc.rootGen).toBe(n > 0 ? LOAD_GEN : 0);
      expect(recordsOf(new Map([...inc.newNodes].map((w) => [toHex64(w.hash), w.record])))).toEqual(
        recordsOf(nodes.map),
      );
      if (n > 0) {
        const [first] = [...leaves.keys()];
        const change = new Map([
          [first!, bigintToBytes32(0n)],
          [12345n, bigintToBytes32(9n)],
        ]);
        const next = await updatePatricia(engine, nodes, height, root, LOAD_GEN, NEXT_GEN, change, "t");
        expect(next.rootGen).toBe(NEXT_GEN);
        const want = new Map(leaves).set(12345n, 9n);
        want.delete(first!);
        expect(bytesToBigint(next.root)).toBe(naivePatriciaRoot(height, want));
      }
    },
  );

  it("matches the spec's example {1: 75, 2: 25}", async () => {
    const root = await buildPatricia(
      engine,
      251,
      pack([
        [1n, 75n],
        [2n, 25n],
      ]),
      () => undefined,
    );
    expect(toHex64(root)).toBe("06728b2316b72c82bdee91c665affeff1eeb39a3f7bff9690a0098c183f5e6e5");
  });

  it("refuses unsorted or out-of-range ids", async () => {
    const bad = { ids: [5n, 3n], hashes: new Uint8Array(64).fill(1) };
    await expect(buildPatricia(engine, 251, bad, () => undefined)).rejects.toThrow(/ascending/);
    const out = { ids: [1n << 10n], hashes: new Uint8Array(32).fill(1) };
    const empty = await emptyRoots(engine, "order", 10);
    await expect(buildMerkle(engine, empty, out, () => undefined)).rejects.toThrow(/outside/);
  });
});
