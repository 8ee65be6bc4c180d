import { DacdError } from "../../errors.js";
import type { HashEngine } from "../../verifier/hash/engine.js";
import type { PositionLeaf, VaultLeaf } from "../../model/state-update.js";
import { emptyRoots } from "../../verifier/trees/update/compute-roots.js";
import { decodeLeafRecord } from "../../verifier/trees/format/leaves.js";
import { bigintToBytes32, bytesToBigint, hexToBytes32 } from "../../util/bytes.js";
import { pathNodes, pedersen } from "../onchain/path.js";
import { perpetualEscape, positionValues } from "../onchain/perpetual.js";
import { spotEscape } from "../onchain/spot.js";
import { PAGE_FILE_NAMES, pageFile } from "../page/assets.js";
import { kitSharedState, perpetualProofText, spotProofText, type KitTree } from "./encode.js";
import { escapeSharedState } from "../onchain/from-proof.js";
import { KIT_FORMAT, LAYOUT_RULE, SHARD_DIGITS } from "./layout.js";
import { PathStack } from "./path-stack.js";
import type { LeafPath } from "./path-walk.js";
import type { KitHead, PathSource } from "./source.js";
import { KitWriter } from "./writer.js";

/**
 * `dacd escape-kit`: every non-empty leaf of the escape tree at a batch, as the on-chain proof
 * `dacd proof … --format starkex` prints, one file per leaf in the kit's layout (layout.ts), then
 * the page (index.html and its files) and `manifest.json`, for any static host (docs/escape.md,
 * "The escape kit"). One walk of the tree; the proofs are built from the walk's path stack.
 */

export interface EscapeContracts {
  readonly exchange: string;
  readonly verifier: string;
}

export interface KitOptions {
  readonly out: string;
  readonly contracts?: EscapeContracts;
  /** Called after each block of leaves written, with the count so far. */
  readonly progress?: (leaves: number) => void;
  /**
   * Also build every n-th leaf's proof with the onchain module (path recomputed from the leaf
   * hash and siblings) and stop unless the texts are equal; the first leaf of every block is
   * always compared. 1 compares every leaf (tests).
   */
  readonly checkEvery?: number;
}

export interface KitManifest {
  readonly format: typeof KIT_FORMAT;
  readonly profile: string;
  readonly tree: string;
  readonly batch_id: number;
  readonly prev_batch_id: number;
  readonly sequence_number: number;
  readonly claim_hash: string;
  readonly roots: Record<string, string>;
  readonly heights: Record<string, number>;
  /** The escape tree's root, as the proofs give it (0x and 64 hex digits). */
  readonly root: string;
  readonly tree_height: number;
  readonly files: number;
  readonly layout: { readonly rule: string; readonly path: string; readonly shard_digits: number };
  readonly shard_list: string;
  readonly shards: Record<string, { files: number; sha256: string }>;
  readonly escape_contracts: EscapeContracts | null;
  readonly page: string;
  readonly created_at: string;
}

export async function buildKit(
  engine: HashEngine,
  source: PathSource,
  opts: KitOptions,
): Promise<KitManifest> {
  const { head } = source;
  const spec = head.tree;
  const rootBytes = hexToBytes32(head.root);
  if (!rootBytes) throw new DacdError("STORE", `the ${spec.name} root ${head.root} is not 64 hex digits`);
  const writer = await KitWriter.open(opts.out);
  try {
    const stack = new PathStack(
      engine,
      spec.height,
      rootBytes,
      await emptyRoots(engine, spec.leaf, spec.height),
    );
    const tree: KitTree = {
      rootHex63: head.root.slice(1),
      height: spec.height,
      source: { profile: head.profile, batch_id: head.batch_id, sequence_number: head.sequence_number },
      ...(head.shared_state ? { shared: kitSharedState(escapeSharedState(head.shared_state)) } : {}),
    };
    if (head.root[0] !== "0") throw new DacdError("STORE", `the ${spec.name} root is not a field element`);
    const checkEvery = opts.checkEvery ?? 0;
    let done = 0;
    for await (const block of source.blocks) {
      const apply = await stack.prepare(block);
      const texts =
        spec.leaf === "vault" ? vaultTexts(engine, tree, block) : positionTexts(engine, tree, block);
      const build = await texts;
      for (let i = 0; i < block.length; i++) {
        apply(i);
        const leaf = block[i]!;
        const text = build(i, stack.rows);
        if (i === 0 || (checkEvery > 0 && (done + i) % checkEvery === 0))
          await compareWithOnchain(engine, head, tree, leaf, stack, text);
        const room = writer.add(spec.name, leaf.index, text);
        if (room) await room;
      }
      done += block.length;
      opts.progress?.(done);
    }
    for (const name of PAGE_FILE_NAMES) await writer.addFile(name, pageFile(name).body);
    const written = await writer.written();
    const manifest: KitManifest = {
      format: KIT_FORMAT,
      profile: head.profile,
      tree: spec.name,
      batch_id: head.batch_id,
      prev_batch_id: head.prev_batch_id,
      sequence_number: head.sequence_number,
      claim_hash: head.claim_hash,
      roots: head.roots,
      heights: head.heights,
      root: "0x" + head.root,
      tree_height: spec.height,
      files: written.files,
      layout: { rule: LAYOUT_RULE, path: "{tree}/{shard}/{id}.json", shard_digits: SHARD_DIGITS },
      shard_list:
        "shards[tree/shard].sha256 is the SHA-256 of the lines `<sha256 of the file>  <id>.json` of the shard's files in ascending id order (what `sha256sum $(ls | sort -n)` prints in the shard's directory)",
      shards: written.shards,
      escape_contracts: opts.contracts ?? null,
      page: "index.html",
      created_at: new Date().toISOString(),
    };
    await writer.finish(manifest);
    return manifest;
  } catch (err) {
    await writer.abort();
    throw err;
  }
}

type TextOf = (i: number, pathRows: readonly string[]) => string;

/** The vaults of a block, their H(stark key, asset id) hashed in one engine call. */
async function vaultTexts(engine: HashEngine, tree: KitTree, block: readonly LeafPath[]): Promise<TextOf> {
  const vaults = block.map((l) => decodeLeafRecord("vault", l.record) as VaultLeaf);
  const xs = new Uint8Array(block.length * 32);
  const ys = new Uint8Array(block.length * 32);
  vaults.forEach((v, i) => {
    xs.set(bigintToBytes32(v.key), i * 32);
    ys.set(bigintToBytes32(v.token), i * 32);
  });
  const keyAsset = await engine.hashMany(xs, ys);
  return (i, rows) =>
    spotProofText(tree, block[i]!.index, vaults[i]!, keyAsset.subarray(i * 32, i * 32 + 32), rows);
}

/** The positions of a block, their hash chains climbed together, a link per engine call. */
async function positionTexts(engine: HashEngine, tree: KitTree, block: readonly LeafPath[]): Promise<TextOf> {
  const positions = block.map((l) => decodeLeafRecord("position", l.record) as PositionLeaf);
  const values = positions.map(positionValues);
  const states = values.map(() => [0n]);
  const longest = Math.max(0, ...values.map((v) => v.length));
  for (let s = 0; s < longest; s++) {
    const at = values.flatMap((v, i) => (v.length > s ? [i] : []));
    const xs = new Uint8Array(at.length * 32);
    const ys = new Uint8Array(at.length * 32);
    at.forEach((i, t) => {
      xs.set(bigintToBytes32(states[i]![s]!), t * 32);
      ys.set(bigintToBytes32(values[i]![s]!), t * 32);
    });
    const hs = await engine.hashMany(xs, ys);
    at.forEach((i, t) => states[i]!.push(bytesToBigint(hs, t * 32)));
  }
  states.forEach((st, i) => {
    if (st[st.length - 1] !== bytesToBigint(block[i]!.leafHash))
      throw new DacdError("STORE", `position ${block[i]!.index}: the position does not hash to its leaf`);
  });
  return (i, rows) => perpetualProofText(tree, block[i]!.index, positions[i]!, values[i]!, states[i]!, rows);
}

/**
 * The leaf's proof from the onchain module, its path's nodes recomputed from the leaf hash and
 * the siblings up to the root: the kit stops unless it is the text the kit wrote.
 */
async function compareWithOnchain(
  engine: HashEngine,
  head: KitHead,
  tree: KitTree,
  leaf: LeafPath,
  stack: PathStack,
  text: string,
): Promise<void> {
  const siblings = stack.siblings.map((s) => bytesToBigint(s));
  const leafHash = bytesToBigint(leaf.leafHash);
  const nodes = await pathNodes(engine, leafHash, siblings, leaf.index);
  if (nodes[siblings.length] !== BigInt("0x" + head.root))
    throw new DacdError(
      "STORE",
      `${head.tree.name} ${leaf.index}: its path does not lead to the batch's root`,
    );
  const path = { index: leaf.index, siblings, nodes };
  let expected: unknown;
  if (head.tree.leaf === "vault") {
    const v = decodeLeafRecord("vault", leaf.record) as VaultLeaf;
    const keyAsset = await pedersen(engine, v.key, v.token);
    expected = spotEscape(
      { starkKey: v.key, assetId: v.token, quantizedAmount: v.balance },
      keyAsset,
      path,
      tree.source,
    );
  } else {
    const p = decodeLeafRecord("position", leaf.record) as PositionLeaf;
    const values = positionValues(p);
    const states = [0n];
    for (const v of values) states.push(await pedersen(engine, states[states.length - 1]!, v));
    expected = perpetualEscape(p, states, path, tree.source, tree.shared?.state);
  }
  if (JSON.stringify(expected, null, 2) + "\n" !== text)
    throw new DacdError(
      "STORE",
      `${head.tree.name} ${leaf.index}: the kit's proof differs from dacd proof --format starkex's (a bug: please report it)`,
    );
}
