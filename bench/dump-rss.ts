/**
 * Dump/load at scale: `node dist/bench/dump-rss.js [vaults]` (default 1,000,000).
 *
 * 1. writes a dump of a spot-v4.0 state with N vaults (and a few orders) and its manifest, the
 *    roots computed with the bulk builders;
 * 2. in a child process, `load`s it into a fresh store (time, peak RSS);
 * 3. in another child process, `dump`s that store again (time, peak RSS; must stay < 500 MiB) and
 *    checks the files are byte for byte the ones written in step 1.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { createWriteStream, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { once } from "node:events";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DUMP_MAX_OPEN_FILES, dumpStore } from "../src/escape/dump.js";
import { CSV_HEADERS, DUMP_FORMAT, type Manifest } from "../src/escape/formats.js";
import { loadDump } from "../src/escape/load.js";
import { computeClaimHash } from "../src/signer/claim.js";
import { BULK_LOAD_WRITE_BUFFER } from "../src/storage/bulk-writer.js";
import { LevelStore } from "../src/storage/level-store.js";
import { bigintToBytes32, toHex0x, toHex64 } from "../src/util/bytes.js";
import { buildMerkle } from "../src/trees/bulk-build.js";
import { emptyRoots } from "../src/trees/compute-roots.js";
import { createEngine } from "../src/hash/select.js";
import { hashLeaves } from "../src/trees/leaves.js";
import { makeProfile } from "../src/model/profile.js";
import type { VaultLeaf } from "../src/model/state-update.js";

const self = fileURLToPath(import.meta.url);
const profile = makeProfile("spot-v4.0");

function vault(i: number): { id: bigint; leaf: VaultLeaf } {
  // Ids with gaps, keys and tokens below the field prime, balances varied.
  const id = BigInt(i + Math.floor(i / 4));
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

async function makeDump(dir: string, n: number): Promise<Manifest> {
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

/** Peak anonymous and file-backed resident memory (Linux), sampled every 100 ms. */
function sampleRss(): () => { anon_mib: number; file_mib: number } {
  const peak = { anon_mib: 0, file_mib: 0 };
  const read = (): void => {
    try {
      const status = readFileSync("/proc/self/status", "utf8");
      const kb = (name: string): number => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
      peak.anon_mib = Math.max(peak.anon_mib, Math.round(kb("RssAnon") / 1024));
      peak.file_mib = Math.max(peak.file_mib, Math.round((kb("RssFile") + kb("RssShmem")) / 1024));
    } catch {
      /* not Linux */
    }
  };
  const timer = setInterval(read, 100);
  return () => {
    clearInterval(timer);
    read();
    return peak;
  };
}

async function child(mode: string, a: string, b: string): Promise<void> {
  const stop = sampleRss();
  const started = performance.now();
  const engine = createEngine("auto", mode === "load" ? { threads: "auto" } : {});
  const store = await LevelStore.open(
    mode === "load" ? a : b,
    mode === "load" ? { writeBufferSize: BULK_LOAD_WRITE_BUFFER } : { maxOpenFiles: DUMP_MAX_OPEN_FILES },
  );
  try {
    if (mode === "load") await loadDump(store, engine, { fromDir: b });
    else await dumpStore(store, engine, { outDir: a });
  } finally {
    await store.close();
    await engine.close?.();
  }
  const out = {
    mode,
    engine: engine.name,
    ms: Math.round(performance.now() - started),
    max_rss_mib: Math.round(process.resourceUsage().maxRSS / 1024),
    peak: stop(),
  };
  process.stdout.write(JSON.stringify(out) + "\n");
}

function runChild(...args: string[]): Record<string, unknown> {
  const r = spawnSync(process.execPath, [self, "--child", ...args], { encoding: "utf8", maxBuffer: 1 << 20 });
  if (r.status !== 0) throw new Error(`child ${args[0]} failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split("\n").pop()!) as Record<string, unknown>;
}

async function main(): Promise<void> {
  if (process.argv[2] === "--child") return child(process.argv[3]!, process.argv[4]!, process.argv[5]!);
  const n = Number(process.argv[2] ?? 1_000_000);
  const dir = await mkdtemp(join(tmpdir(), "dacd-dump-bench-"));
  try {
    const t0 = performance.now();
    const manifest = await makeDump(join(dir), n);
    const made = Math.round(performance.now() - t0);
    const load = runChild("load", join(dir, "db"), dir);
    const dump = runChild("dump", join(dir, "out"), join(dir, "db"));
    const redumped = JSON.parse(await readFile(join(dir, "out", "manifest.json"), "utf8")) as Manifest;
    const key = (m: Manifest): string =>
      JSON.stringify(Object.entries(m.trees).map(([k, t]) => [k, t.root, t.leaves, t.bytes, t.sha256]));
    const same = key(redumped) === key(manifest);
    const row = {
      vaults: n,
      generate_ms: made,
      load,
      dump,
      round_trip_identical: same,
      dump_rss_below_500_mib: (dump.max_rss_mib as number) < 500,
    };
    process.stdout.write(JSON.stringify(row, null, 2) + "\n");
    if (!same || !row.dump_rss_below_500_mib) process.exitCode = 1;
  } finally {
    if (!process.env.KEEP) await rm(dir, { recursive: true, force: true });
    else process.stderr.write(`kept ${dir}\n`);
  }
}

await main();
