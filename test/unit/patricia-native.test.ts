import { describe, expect, it } from "vitest";
import { DacdError } from "../../src/errors.js";
import { bigintToBytes32, toHex64 } from "../../src/util/bytes.js";
import { prng } from "../../src/util/prng.js";
import { createEngine } from "../../src/verifier/hash/select.js";
import { chooseTreeWalk, defaultTreeWalk } from "../../src/verifier/trees/update/tree-walk.js";
import { readRuntimeSettings } from "../../src/config/runtime-settings.js";
import { updatePatricia } from "../../src/verifier/trees/update/update-tree.js";
import { naivePatriciaRoot } from "../helpers/naive-trees.js";
import {
  compareWalks,
  randomBatches,
  updateWith,
  type TreeUpdate,
  type Walk,
} from "../helpers/compare-walks.js";
import { hex, RecordingStore } from "../helpers/recording-store.js";
import { nativeAvailable } from "../helpers/native-required.js";

const engine = createEngine("auto");
const HEIGHT = 251;
/** The Patricia update at `height`, with the walk given. */
const patricia =
  (height = HEIGHT): TreeUpdate =>
  (store, root, rootGen, batchGen, leaves, walk) =>
    updatePatricia(engine, store, height, root, rootGen, batchGen, leaves, "order", undefined, walk);

/**
 * One update with the given walk at height 251, from `root` of gen `rootGen`, its records of gen
 * `batchGen`: everything it wrote and remembered.
 */
const update = (
  walk: Walk,
  store: RecordingStore,
  root: Uint8Array,
  rootGen: number,
  batchGen: number,
  changes: Map<bigint, bigint>,
) => updateWith(walk, patricia(), store, root, rootGen, batchGen, changes);

/**
 * Both walks over the same random batches (compareWalks); the last root against the naive one.
 * `randomId` draws a new leaf id.
 */
async function compareOnRandomBatches(
  height: number,
  seed: number,
  steps: number,
  randomId: (r: () => number) => bigint,
) {
  const rand = prng(seed);
  const batches = randomBatches(rand, 60, () => randomId(rand));
  const { state, root } = await compareWalks(patricia(height), new Uint8Array(32), steps, batches);
  // The naive root (BigInt Pedersen over every leaf) is slow: checked once, at the end.
  expect(toHex64(root)).toBe(toHex64(bigintToBytes32(naivePatriciaRoot(height, state))));
}

const native = defaultTreeWalk();
const haveNative = nativeAvailable("the native tree walks", native !== null);

describe.skipIf(!haveNative)("the native Patricia walk", () => {
  it("writes and remembers exactly what the JavaScript walk does, batch after batch", async () => {
    // Clustered ids and ids spread over 251 bits.
    await compareOnRandomBatches(HEIGHT, 77, 12, (rand) =>
      rand() < 0.4
        ? BigInt(Math.floor(rand() * 4096))
        : BigInt(Math.floor(rand() * 2 ** 48)) << BigInt(Math.floor(rand() * 200)),
    );
  });

  it("agrees with the JavaScript walk on a small, dense tree (subtrees emptied and edges merged)", async () => {
    await compareOnRandomBatches(10, 78, 25, (rand) => BigInt(Math.floor(rand() * 1024)));
  });

  it("merges an untouched edge into the one above when a deletion leaves it alone", async () => {
    // Leaf 0 on the left; 2^200 and 2^200 + 1 under one edge and a binary node on the right.
    // Deleting leaf 0 leaves the root with only its right child, an untouched stored node that the
    // walk never entered: it is read only now, and its edge merged with the one above.
    const store = new RecordingStore();
    const first = new Map([
      [0n, 5n],
      [1n << 200n, 6n],
      [(1n << 200n) + 1n, 7n],
    ]);
    for (const walk of ["js", "native"] as const) {
      const built = await update(walk, store, new Uint8Array(32), 0, 1, first);
      expect(built.rootGen, walk).toBe(1);
      store.memory.putNodes(built.out);
      const after = await update(walk, store, built.rootBytes, built.rootGen, 2, new Map([[0n, 0n]]));
      const want = naivePatriciaRoot(HEIGHT, new Map([...first, [0n, 0n]]));
      expect(after.root, walk).toBe(toHex64(bigintToBytes32(want)));
      // The new root is one edge from the top down to the binary node.
      expect(after.written, walk).toHaveLength(1);
      // Its record: bottom ‖ path ‖ length ‖ the bottom's gen (the untouched binary node, batch 1's).
      expect(after.written[0]!.endsWith((HEIGHT - 1).toString(16) + "00000001"), walk).toBe(true);
      expect(after.rootGen, walk).toBe(2);
    }
  });

  it("reports a missing or corrupt record as the JavaScript walk does, naming the tree and node", async () => {
    const store = new RecordingStore();
    const built = await update(
      "js",
      store,
      new Uint8Array(32),
      0,
      1,
      new Map([
        [3n, 1n],
        [9n, 2n],
        [1n << 100n, 3n],
      ]),
    );
    const again = new Map([[4n, 8n]]);
    // The root's record missing, then cut to 40 bytes.
    for (const corrupt of [undefined, new Uint8Array(40)]) {
      const broken = new RecordingStore();
      broken.memory.putNodes(built.out);
      broken.memory.putNodes([{ hash: built.rootBytes, record: corrupt ?? new Uint8Array(0) }]);
      const lookup = broken.getNodes.bind(broken);
      if (!corrupt)
        broken.getNodes = async (h, g) => (await lookup(h, g)).map((r) => (r?.length ? r : undefined));
      const errors: string[] = [];
      for (const walk of ["js", "native"] as const) {
        const err = await update(walk, broken, built.rootBytes, built.rootGen, 2, again).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err, walk).toBeInstanceOf(DacdError);
        errors.push((err as Error).message);
      }
      expect(errors[1]).toBe(errors[0]);
      expect(errors[0]).toMatch(new RegExp(`^order tree: node ${hex(built.rootBytes)} at height 251: `));
    }
  });

  it("refuses malformed input at the addon's boundary with errors, not crashes", () => {
    const ids = (...xs: bigint[]) => {
      const out = new Uint8Array(xs.length * 32);
      xs.forEach((x, i) => out.set(bigintToBytes32(x), i * 32));
      return out;
    };
    const leaves = (n: number) => new Uint8Array(n * 32).fill(1);
    const root = new Uint8Array(32);
    const create = (idBytes: Uint8Array, leafBytes: Uint8Array, height = 8) =>
      native!.patriciaCreate(height, 0, idBytes, leafBytes, root, 0, 1);
    expect(() => create(ids(5n, 3n), leaves(2))).toThrow(/not in ascending order/);
    expect(() => create(ids(5n, 5n), leaves(2))).toThrow(/are equal/);
    expect(() => create(ids(256n), leaves(1))).toThrow(/does not fit a tree of height 8/);
    expect(() => create(ids(1n), leaves(2))).toThrow(/as many/);
    expect(() => create(ids(1n), leaves(1), 0)).toThrow(/bad tree update/);
    expect(() => create(ids(), leaves(0))).toThrow(/bad tree update/);
    const h = create(ids(1n, 2n), leaves(2));
    // Records for a step that asked for none, a rank that does not exist, a freed handle.
    expect(() => native!.patriciaSupply(h, new Uint8Array(69), new Uint32Array(1))).toThrow(/one record per/);
    expect(() => native!.patriciaRankInputs(h, 7)).toThrow(/no such rank/);
    native!.patriciaFree(h);
    expect(() => native!.patriciaStep(h)).toThrow(/not a live Patricia update/);
  });

  it("is chosen by DACD_TREE_WALK, and a wrong value is refused", () => {
    const fromEnv = (env: Record<string, string>) => chooseTreeWalk(readRuntimeSettings(env).treeWalk);
    expect(fromEnv({ DACD_TREE_WALK: "js" })).toBeNull();
    expect(fromEnv({ DACD_TREE_WALK: " native " })).not.toBeNull();
    expect(fromEnv({})).toBe(native);
    expect(() => fromEnv({ DACD_TREE_WALK: "fast" })).toThrow(/must be one of auto, native, js/);
  });
});
