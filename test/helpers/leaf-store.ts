import { createHash } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { DUMP_FILES, DUMP_FORMAT, leafLine, CSV_HEADERS, type Manifest } from "../../src/escape/formats.js";
import { loadDump } from "../../src/escape/load.js";
import { makeProfile, type ProfileName } from "../../src/model/profile.js";
import type { PositionLeaf, VaultLeaf } from "../../src/model/state-update.js";
import { computeClaimHash } from "../../src/signer/claim.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { toHex0x, toHex64 } from "../../src/util/bytes.js";
import type { HashEngine } from "../../src/verifier/hash/engine.js";
import { buildMerkle } from "../../src/verifier/trees/bulk/bulk-build.js";
import { hashLeaves } from "../../src/verifier/trees/format/leaves.js";
import { emptyRoots } from "../../src/verifier/trees/update/compute-roots.js";
import { tempDir } from "./temp-dir.js";

/**
 * A store holding exactly the given escape-tree leaves (vaults of spot-v4.0, or positions of
 * perpetual), made the way a member makes one from a dump (`dacd load`): the dump written here,
 * its roots from the bulk builder, then loadDump. The order tree is empty.
 */
export async function leafStore(
  engine: HashEngine,
  profileName: Extract<ProfileName, "spot-v4.0" | "perpetual">,
  leaves: ReadonlyMap<bigint, VaultLeaf | PositionLeaf>,
): Promise<{ store: LevelStore; dir: string }> {
  const profile = makeProfile(profileName);
  const main = profile.main;
  const order = profile.order!;
  const dir = await tempDir("dacd-leaf-store-");
  const dump = join(dir, "dump");
  await mkdir(dump);
  const ids = [...leaves.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const hs = await hashLeaves(
    engine,
    main.leaf,
    ids.map((id) => leaves.get(id)!),
  );
  const hashes = new Uint8Array(ids.length * 32);
  hs.forEach((h, i) => hashes.set(h, i * 32));
  const mainRoot = await buildMerkle(
    engine,
    await emptyRoots(engine, main.leaf, main.height),
    { ids, hashes },
    () => undefined,
  );
  const orderRoot = (await emptyRoots(engine, order.leaf, order.height))[order.height]!;
  const header = CSV_HEADERS[main.leaf];
  const text =
    (header ? header + "\n" : "") + ids.map((id) => leafLine(main.leaf, id, leaves.get(id)!)).join("");
  const file = DUMP_FILES[main.name];
  await writeFile(join(dump, file), text);
  const roots = { [main.name]: toHex64(mainRoot), order: toHex64(orderRoot) };
  const manifest: Manifest = {
    format: DUMP_FORMAT,
    profile: profileName,
    batch_id: 41,
    prev_batch_id: 40,
    sequence_number: 41,
    claim_hash: toHex0x(computeClaimHash(profile, { [main.name]: mainRoot, order: orderRoot }, 41)),
    heights: { [main.name]: main.height, order: order.height },
    roots,
    trees: {
      [main.name]: {
        kind: "merkle",
        leaf: main.leaf,
        height: main.height,
        root: roots[main.name]!,
        file,
        leaves: ids.length,
        bytes: Buffer.byteLength(text),
        sha256: createHash("sha256").update(text).digest("hex"),
      },
      order: {
        kind: order.kind,
        leaf: order.leaf,
        height: order.height,
        root: roots.order!,
        file: null,
        leaves: null,
        bytes: null,
        sha256: null,
      },
    },
    created_at: new Date().toISOString(),
  };
  await writeFile(join(dump, "manifest.json"), JSON.stringify(manifest, null, 2));
  const store = await LevelStore.open(join(dir, "db"));
  await loadDump(store, engine, { fromDir: dump });
  return { store, dir: join(dir, "db") };
}
