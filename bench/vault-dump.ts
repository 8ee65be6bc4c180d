import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { writeFile } from "node:fs/promises";
import { once } from "node:events";
import { join } from "node:path";
import { CSV_HEADERS, DUMP_FORMAT, type Manifest } from "../src/escape/formats.js";
import { computeClaimHash } from "../src/signer/claim.js";
import { bigintToBytes32, toHex0x, toHex64 } from "../src/util/bytes.js";
import { buildMerkle } from "../src/verifier/trees/bulk/bulk-build.js";
import { emptyRoots } from "../src/verifier/trees/update/compute-roots.js";
import { createEngine } from "../src/verifier/hash/select.js";
import { hashLeaves } from "../src/verifier/trees/format/leaves.js";
import { makeProfile } from "../src/model/profile.js";
import type { VaultLeaf } from "../src/model/state-update.js";

const profile = makeProfile("spot-v4.0");

export function vaultAt(i: number, n: number, spread: boolean): { id: bigint; leaf: VaultLeaf } {
  // Ids with gaps, keys and tokens below the field prime, balances varied.
  const step = Math.floor(2 ** 31 / Math.max(n, 1));
  const id = spread ? BigInt(i * step + ((i * 2654435761) % step)) : BigInt(i + Math.floor(i / 4));
  const key = (BigInt(i + 1) * 0x9e3779b97f4a7c15n) & ((1n << 250n) - 1n);
  const token = BigInt(1 + (i % 97));
  return {
    id,
    leaf: { key: key === 0n ? 1n : key, token, balance: BigInt(1 + ((i * 7919) % 1_000_000_007)) },
  };
}

async function writeFileHashed(
  path: string,
  lines: Iterable<string>,
): Promise<{ sha256: string; bytes: number }> {
  const ws = createWriteStream(path);
  const sha = createHash("sha256");
  let bytes = 0;
  let buf = "";
  const flush = async (): Promise<void> => {
    const b = Buffer.from(buf);
    buf = "";
    sha.update(b);
    bytes += b.length;
    if (!ws.write(b)) await once(ws, "drain");
  };
  for (const l of lines) {
    buf += l;
    if (buf.length > 1 << 20) await flush();
  }
  await flush();
  ws.end();
  await once(ws, "finish");
  return { sha256: sha.digest("hex"), bytes };
}

/**
 * A dump of a spot-v4.0 state with `n` vaults (and 1,000 orders) and its manifest, the roots
 * computed with the bulk builders, for `dacd load`. Vault ids are dense with gaps, or with
 * `spread` spread evenly over the tree's 2^31 ids (each leaf then below a long edge, as in a
 * real exchange's sparse tree).
 */
export async function makeVaultDump(
  dir: string,
  n: number,
  opts: { spread?: boolean } = {},
): Promise<Manifest> {
  const vault = (i: number) => vaultAt(i, n, opts.spread === true);
  const engine = createEngine("auto", { threads: "auto" });
  const ids: bigint[] = [];
  const hashes = new Uint8Array(n * 32);
  const block = 65536;
  for (let i = 0; i < n; i += block) {
    const vs = Array.from({ length: Math.min(block, n - i) }, (_, k) => vault(i + k));
    const hs = await hashLeaves(
      engine,
      "vault",
      vs.map((v) => v.leaf),
    );
    vs.forEach((v, k) => {
      ids.push(v.id);
      hashes.set(hs[k]!, (i + k) * 32);
    });
  }
  const vaultRoot = await buildMerkle(
    engine,
    await emptyRoots(engine, "vault", 31),
    { ids, hashes },
    () => undefined,
  );
  const orders = Array.from(
    { length: 1000 },
    (_, i) => [BigInt(i) * 7_000_000_000_000n + 5n, BigInt(i + 1)] as const,
  );
  const orderHashes = new Uint8Array(orders.length * 32);
  orders.forEach(([, v], i) => orderHashes.set(bigintToBytes32(v), i * 32));
  const orderRoot = await buildMerkle(
    engine,
    await emptyRoots(engine, "order", 63),
    { ids: orders.map(([id]) => id), hashes: orderHashes },
    () => undefined,
  );
  await engine.close?.();

  const vaultFile = await writeFileHashed(
    join(dir, "vaults.csv"),
    (function* () {
      yield CSV_HEADERS.vault + "\n";
      for (let i = 0; i < n; i++) {
        const { id, leaf } = vault(i);
        yield `${id},0x${leaf.key.toString(16)},0x${leaf.token.toString(16)},${leaf.balance}\n`;
      }
    })(),
  );
  const orderFile = await writeFileHashed(
    join(dir, "orders.csv"),
    (function* () {
      yield CSV_HEADERS.order + "\n";
      for (const [id, v] of orders) yield `${id},${v}\n`;
    })(),
  );
  const roots = { vault: toHex64(vaultRoot), order: toHex64(orderRoot) };
  const manifest: Manifest = {
    format: DUMP_FORMAT,
    profile: "spot-v4.0",
    batch_id: 41,
    prev_batch_id: 40,
    sequence_number: 41,
    claim_hash: toHex0x(computeClaimHash(profile, { vault: vaultRoot, order: orderRoot }, 41)),
    heights: { vault: 31, order: 63 },
    roots,
    trees: {
      vault: {
        kind: "merkle",
        leaf: "vault",
        height: 31,
        root: roots.vault,
        file: "vaults.csv",
        leaves: n,
        ...vaultFile,
      },
      order: {
        kind: "merkle",
        leaf: "order",
        height: 63,
        root: roots.order,
        file: "orders.csv",
        leaves: orders.length,
        ...orderFile,
      },
    },
    created_at: new Date().toISOString(),
  };
  await writeFile(join(dir, "manifest.json"), JSON.stringify(manifest, null, 2));
  return manifest;
}
