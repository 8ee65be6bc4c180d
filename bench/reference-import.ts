import { createWriteStream, type WriteStream } from "node:fs";
import { access, mkdir, mkdtemp, rm, stat } from "node:fs/promises";
import { once } from "node:events";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeArchive, type ArchiveEntry } from "../src/escape/reference-archive.js";
import { ordersFile } from "../src/escape/reference-format.js";
import { importReference, type ReferenceProgress } from "../src/escape/reference-load.js";
import { toHex64, writeBigint32, ZERO32 } from "../src/util/bytes.js";
import { prng } from "../src/util/prng.js";
import { buildMerkle, buildPatricia } from "../src/verifier/trees/bulk/bulk-build.js";
import { emptyRoots } from "../src/verifier/trees/update/compute-roots.js";
import type { HashEngine } from "../src/verifier/hash/engine.js";
import { hashAndEncodeLeaves } from "../src/verifier/trees/format/leaves.js";
import { makeProfile } from "../src/model/profile.js";
import type { VaultLeaf } from "../src/model/state-update.js";

/**
 * The import of a reference member's state archive (`dacd load --from-reference`) at the size the
 * issue sets: 1M vaults and 500k orders, spot profile, 4 order subtrees. The archive is generated
 * once (random leaves, roots computed by the bulk builders without a store) and kept in the
 * system's temp directory for later runs; only the import is timed.
 */

export interface ReferenceImportResult {
  readonly vaults: number;
  readonly orders: number;
  readonly archive_mb: number;
  readonly generated_s?: number;
  readonly import_s: number;
  /** CPU seconds of this process (all its threads) during the import; bzip2's child process not included. */
  readonly import_cpu_s: number;
  /** Seconds from the start of the import to the end of each phase. */
  readonly phases_s: Record<string, number>;
}

const SUBTREES = 4;

function randomBits(r: () => number, bits: number): bigint {
  let v = 0n;
  for (let got = 0; got < bits; got += 30) v = (v << 30n) | BigInt(Math.floor(r() * 2 ** 30));
  return v & ((1n << BigInt(bits)) - 1n);
}

async function writeRows(ws: WriteStream, text: string): Promise<void> {
  if (!ws.write(text, "latin1")) await once(ws, "drain");
}

async function closeFile(ws: WriteStream): Promise<void> {
  ws.end();
  await once(ws, "finish");
}

/** Writes a valid archive of `vaults` vaults and `orders` orders to `out`. */
async function generate(engine: HashEngine, out: string, vaults: number, orders: number): Promise<void> {
  const profile = makeProfile("spot");
  const r = prng(29);
  const dir = await mkdtemp(join(tmpdir(), "dacd-bench-ref-"));
  try {
    // Vaults: distinct ids below 2^31, in order; random keys and tokens below 2^250, balances below 2^63.
    const idSet = new Set<number>();
    while (idSet.size < vaults) idSet.add(Math.floor(r() * 2 ** 31));
    const vaultIds = [...idSet].sort((a, b) => a - b);
    const vaultHashes = new Uint8Array(vaults * 32);
    const ws = createWriteStream(join(dir, "vaults.csv"));
    const block = 65536;
    for (let s = 0; s < vaults; s += block) {
      const leaves: VaultLeaf[] = [];
      let text = "";
      for (let i = s; i < Math.min(vaults, s + block); i++) {
        const v = { key: randomBits(r, 250), token: randomBits(r, 250), balance: 1n + randomBits(r, 62) };
        leaves.push(v);
        text += `${vaultIds[i]},${v.key},${v.token},${v.balance}\r\n`;
      }
      const { hashes } = await hashAndEncodeLeaves(engine, "vault", leaves);
      hashes.forEach((h, j) => vaultHashes.set(h, (s + j) * 32));
      await writeRows(ws, text);
    }
    await closeFile(ws);
    const vaultRoot = await buildMerkle(
      engine,
      await emptyRoots(engine, "vault", profile.main.height),
      { ids: vaultIds.map(BigInt), hashes: vaultHashes },
      () => undefined,
    );

    // Orders: distinct ids below 2^251, in order, one file per subtree; amounts below 2^63.
    const orderIdSet = new Set<bigint>();
    while (orderIdSet.size < orders) orderIdSet.add(randomBits(r, profile.order.height));
    const orderIds = [...orderIdSet].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const values = new Uint8Array(orders * 32);
    const shift = BigInt(profile.order.height - Math.log2(SUBTREES));
    const files = Array.from({ length: SUBTREES }, (_, j) =>
      createWriteStream(join(dir, ordersFile(SUBTREES + j))),
    );
    let text = "";
    let current = 0;
    for (let i = 0; i < orders; i++) {
      const id = orderIds[i]!;
      const j = Number(id >> shift);
      if (j !== current || text.length > 1 << 20) {
        await writeRows(files[current]!, text);
        text = "";
        current = j;
      }
      const amount = 1n + randomBits(r, 62);
      writeBigint32(amount, values, i * 32);
      text += `${id},${amount}\r\n`;
    }
    await writeRows(files[current]!, text);
    for (const f of files) await closeFile(f);
    const subtrees = new Map<bigint, Uint8Array>();
    const orderRoot = await buildPatricia(
      engine,
      profile.order.height,
      { ids: orderIds, hashes: values },
      () => undefined,
      { probe: { height: profile.order.height - Math.log2(SUBTREES), onNode: (i, h) => subtrees.set(i, h) } },
    );
    const info = {
      batch_id: 1000,
      batch_info: {
        merkle_roots: { vault: toHex64(vaultRoot), order: toHex64(orderRoot), rollup_vault: "00".repeat(32) },
        sequence_number: 999,
      },
      order_subtree_roots: Array.from({ length: SUBTREES }, (_, j) =>
        toHex64(subtrees.get(BigInt(j)) ?? ZERO32),
      ),
    };
    const entries: ArchiveEntry[] = [
      { name: "info.json", data: JSON.stringify(info, null, 4) },
      { name: "vaults.csv", path: join(dir, "vaults.csv") },
      ...Array.from({ length: SUBTREES }, (_, j) => ({
        name: ordersFile(SUBTREES + j),
        path: join(dir, ordersFile(SUBTREES + j)),
      })),
    ];
    await writeArchive(out, entries);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function runReferenceImport(opts: {
  engine: HashEngine;
  vaults: number;
  orders: number;
  log: (s: string) => void;
}): Promise<ReferenceImportResult> {
  const cache = join(tmpdir(), "dacd-bench-cache");
  await mkdir(cache, { recursive: true });
  const archive = join(cache, `reference-state-${opts.vaults}-${opts.orders}.bz2`);
  let generated_s: number | undefined;
  if (
    !(await access(archive).then(
      () => true,
      () => false,
    ))
  ) {
    opts.log(`generating ${archive} (${opts.vaults} vaults, ${opts.orders} orders; kept for later runs)`);
    const t = performance.now();
    await generate(opts.engine, archive, opts.vaults, opts.orders);
    generated_s = (performance.now() - t) / 1000;
  }
  const archive_mb = (await stat(archive)).size / 1e6;
  const dir = await mkdtemp(join(tmpdir(), "dacd-bench-import-"));
  const phases_s: Record<string, number> = {};
  const started = performance.now();
  const cpu0 = process.cpuUsage();
  let lastLog = 0;
  const progress = (p: ReferenceProgress): void => {
    const at = (performance.now() - started) / 1000;
    phases_s[p.phase] = at;
    if (at - lastLog >= 10) {
      lastLog = at;
      opts.log(
        `  ${at.toFixed(0)} s: ${p.phase} ${p.count}${p.total === undefined ? "" : ` (${p.done} of ${p.total})`}`,
      );
    }
  };
  try {
    await importReference(opts.engine, {
      archive,
      dataDir: join(dir, "data"),
      profile: "spot",
      progress,
    });
    const import_s = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const import_cpu_s = (cpu.user + cpu.system) / 1e6;
    return {
      vaults: opts.vaults,
      orders: opts.orders,
      archive_mb,
      generated_s,
      import_s,
      import_cpu_s,
      phases_s,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
