import { fork, spawn, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { chmod, cp, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ordersJson, vaultsJson } from "../src/devnet/serialize.js";
import { makeProfile } from "../src/model/profile.js";
import type { LeafChanges, VaultLeaf } from "../src/model/state-update.js";
import { EthSigner } from "../src/signer/eth-signer.js";
import { LevelStore } from "../src/storage/level-store.js";
import { createEngine } from "../src/verifier/hash/select.js";
import { createTopNodeCache } from "../src/verifier/trees/cache/node-cache.js";
import { verifySignAndStore } from "../src/poller/member/batch-stages.js";
import { warmTopNodes } from "../src/verifier/warm-cache.js";
import { vaultAt } from "./vault-dump.js";

/**
 * `--only escape-kit --kit-beside-member`: the kit built as an operator builds it while the member
 * signs. `dacd run` (a process of its own, as deployed) on the loaded store signs batches that a
 * local gateway (catchup-gateway.ts, another process) announces one every `--kit-batch-every-s`
 * seconds; `dacd escape-kit` then walks through the daemon's control socket. Measured: the
 * daemon's peak RSS while the kit is built (the whole process: /proc's VmRSS sampled every 50 ms,
 * and its VmHWM reset when the build starts), the batches signed during the build, the longest
 * time without a signature, and the longest from a batch's announcement to its signature.
 */

export interface BesideFigures {
  /** Seconds between two batches announced by the gateway. */
  readonly batch_every_s: number;
  readonly vaults_a_batch: number;
  /** The daemon's memory_budget_mib. */
  readonly budget_mib: number;
  readonly batches_prepared: number;
  readonly signed_during_build: number;
  readonly announced_during_build: number;
  /** The longest time without a signature during the build (its start and end count as signatures). */
  readonly longest_gap_s: number;
  /** The longest from a batch's announcement to its accepted signature, for batches announced during the build. */
  readonly longest_wait_s: number;
  /** The daemon's RSS before the build, and its peak during the build. */
  readonly daemon_rss_before_mib: number;
  readonly daemon_peak_rss_mib: number;
  /** The largest anonymous part of its RSS sampled during the build (no mapped tables, no code). */
  readonly daemon_peak_anon_mib: number;
  /** The gateway had no batch left to announce before the build ended (the figures cover less). */
  readonly ran_out: boolean;
}

const MEMBER_KEY = "0x" + "11".repeat(32);
const now = (): number => performance.timeOrigin + performance.now();

/**
 * Batches FIRST… of `vaultsABatch` changed vaults each (existing ids, new balances), verified on a
 * copy of the loaded store to learn their roots and claims, written as the gateway serves them.
 */
async function prepareBatches(
  db: string,
  work: string,
  opts: { vaults: number; spread: boolean; count: number; vaultsABatch: number; log: (s: string) => void },
): Promise<{ bodies: string; first: number }> {
  const scratch = join(work, "scratch");
  const bodies = join(work, "bodies");
  await mkdir(bodies);
  await cp(db, scratch, { recursive: true });
  const engine = createEngine("native", { threads: "auto" });
  const store = await LevelStore.open(scratch);
  try {
    const profile = makeProfile("spot-v4.0");
    const cursor = await store.batches.cursor();
    const first = cursor!.next_batch_id;
    const cache = createTopNodeCache(16);
    await warmTopNodes(cache, store, engine, [profile.main, profile.order], first - 1);
    const ctx = {
      profile,
      engine,
      store,
      signer: new EthSigner(new Uint8Array(32).fill(7)),
      options: { validateOrders: true, validateRollup: undefined },
      topNodes: cache,
    };
    const claims: Record<number, string> = {};
    for (let b = 0; b < opts.count; b++) {
      const id = first + b;
      const vaults: LeafChanges = new Map();
      for (let k = 0; vaults.size < Math.min(opts.vaultsABatch, opts.vaults); k++) {
        const i = (b * opts.vaultsABatch + k * 7919) % opts.vaults;
        const { id: vaultId, leaf } = vaultAt(i, opts.vaults, opts.spread);
        vaults.set(vaultId, {
          ...leaf,
          balance: BigInt(1 + ((id * 104729 + k) % 1_000_000_007)),
        } as VaultLeaf);
      }
      const changes = { vault: vaults, order: new Map() as LeafChanges };
      const { record } = await verifySignAndStore(ctx, id, {
        prevBatchId: id - 1,
        changes,
        statedRoots: {},
      });
      claims[id] = record.claim_hash;
      const body = {
        update: {
          prev_batch_id: id - 1,
          vaults: vaultsJson(changes.vault),
          vault_root: record.roots.vault,
          orders: ordersJson(changes.order),
          order_root: record.roots.order,
        },
      };
      await writeFile(join(bodies, `${id}.json`), JSON.stringify(body));
      if ((b + 1) % 50 === 0) opts.log(`escape-kit bench: ${b + 1} of ${opts.count} batches prepared`);
    }
    await writeFile(join(bodies, "claims.json"), JSON.stringify(claims));
    return { bodies, first };
  } finally {
    await store.close();
    await engine.close?.();
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * VmRSS, VmHWM and RssAnon of a process, MiB (undefined once it is gone). RssAnon leaves out the
 * file-backed pages (LevelDB's memory-mapped tables, code), which the kernel can drop under pressure.
 */
async function rssOf(pid: number): Promise<{ rss: number; hwm: number; anon: number } | undefined> {
  const text = await readFile(`/proc/${pid}/status`, "utf8").catch(() => undefined);
  if (!text) return undefined;
  const kib = (name: string): number =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? 0);
  return { rss: kib("VmRSS") / 1024, hwm: kib("VmHWM") / 1024, anon: kib("RssAnon") / 1024 };
}

function startGateway(
  bodies: string,
  first: number,
  count: number,
): Promise<{ child: ChildProcess; port: number }> {
  const child = fork(
    join(import.meta.dirname, "catchup-gateway.js"),
    [bodies, String(count), String(first)],
    {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    },
  );
  return new Promise((resolve, reject) => {
    child.once("message", (m: { port: number }) => resolve({ child, port: m.port }));
    child.once("exit", (code) => reject(new Error(`the bench gateway exited (${code})`)));
  });
}

/**
 * Runs `build` (the timed `dacd escape-kit` against `db`) while `dacd run` signs on `db`, and
 * returns its result with the member's figures.
 */
export async function besideMember<T>(
  bin: string,
  db: string,
  work: string,
  opts: {
    vaults: number;
    spread: boolean;
    batchEveryS: number;
    vaultsABatch: number;
    /** Batches prepared: enough for the build's expected length. */
    batches: number;
    /** The daemon's `memory_budget_mib`: what it plans its node cache and LevelDB's share from. */
    budgetMib: number;
    log: (s: string) => void;
  },
  build: () => Promise<T>,
): Promise<{ result: T; beside: BesideFigures }> {
  opts.log(
    `escape-kit bench: preparing ${opts.batches} batches of ${opts.vaultsABatch} vaults for the member`,
  );
  const { bodies, first } = await prepareBatches(db, work, {
    vaults: opts.vaults,
    spread: opts.spread,
    count: opts.batches,
    vaultsABatch: opts.vaultsABatch,
    log: opts.log,
  });
  const last = first + opts.batches - 1;
  let gateway: ChildProcess | undefined;
  let daemon: ChildProcess | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    const gw = await startGateway(bodies, first, opts.batches);
    gateway = gw.child;
    const accepted = new Map<number, number>();
    gw.child.on("message", (m: { accepted?: [number, number] }) => {
      if (m.accepted) accepted.set(m.accepted[0], m.accepted[1]);
    });
    await writeFile(join(work, "member.key"), MEMBER_KEY + "\n");
    await chmod(join(work, "member.key"), 0o600);
    const url = `http://127.0.0.1:${gw.port}`;
    const config = join(work, "dacd.yaml");
    await writeFile(
      config,
      [
        "profile: spot-v4.0",
        `availability_gateway_url: "${url}"`,
        `feeder_gateway_url: "${url}"`,
        `private_key_path: ${join(work, "member.key")}`,
        `data_dir: ${db}`,
        "polling_interval_s: 0.1",
        "http_request_timeout_s: 60",
        `memory_budget_mib: ${opts.budgetMib}`,
      ].join("\n") + "\n",
    );
    const logFile = createWriteStream(join(work, "daemon.log"));
    // The heap flags the shipped systemd unit gives the daemon (systemd/dacd.service), on the
    // command line: Node refuses --initial-old-space-size in NODE_OPTIONS.
    daemon = spawn(
      process.execPath,
      ["--max-semi-space-size=64", "--initial-old-space-size=256", bin, "run", "--config", config],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    daemon.stdout!.pipe(logFile);
    daemon.stderr!.pipe(logFile);
    let exited: number | null | undefined;
    daemon.once("exit", (code) => (exited = code));
    const daemonPid = daemon.pid!;

    // The first batch signed: the daemon is up, its control socket open, its cache warm.
    const released = new Map<number, number>([[first, now()]]);
    gw.child.send({ release: first });
    const startedWaiting = now();
    while (!accepted.has(first)) {
      if (exited !== undefined) throw new Error(`dacd run exited (${exited}); see ${work}/daemon.log`);
      if (now() - startedWaiting > 600_000) throw new Error("the member signed no batch in 10 minutes");
      await new Promise((r) => setTimeout(r, 100));
    }
    opts.log(`escape-kit bench: the member signed batch ${first}; building the kit beside it`);

    let next = first + 1;
    let ranOutAt: number | undefined;
    const release = (): void => {
      if (next > last) {
        ranOutAt ??= now();
        return;
      }
      released.set(next, now());
      gw.child.send({ release: next });
      next++;
    };
    const before = (await rssOf(daemonPid))!;
    // Resets the process's VmHWM to its current RSS (proc(5), clear_refs "5").
    await writeFile(`/proc/${daemonPid}/clear_refs`, "5").catch(() => undefined);
    let peak = before.rss;
    let peakAnon = before.anon;
    const sampler = setInterval(() => {
      void rssOf(daemonPid).then((r) => {
        if (r) peak = Math.max(peak, r.rss);
        if (r) peakAnon = Math.max(peakAnon, r.anon);
      });
    }, 50);
    const buildStart = now();
    release();
    timer = setInterval(release, opts.batchEveryS * 1000);
    let result: T;
    try {
      result = await build();
    } finally {
      clearInterval(sampler);
      clearInterval(timer);
      timer = undefined;
    }
    const buildEnd = now();
    const after = await rssOf(daemonPid);
    if (after) peak = Math.max(peak, after.hwm, after.rss);
    if (exited !== undefined)
      throw new Error(`dacd run exited (${exited}) during the build; see ${work}/daemon.log`);

    // The window in which the member had batches to sign.
    const windowEnd = Math.min(buildEnd, ranOutAt ?? Infinity);
    const signs = [...accepted.values()]
      .filter((t) => t > buildStart && t <= windowEnd)
      .sort((a, b) => a - b);
    const marks = [buildStart, ...signs, windowEnd];
    let gap = 0;
    for (let i = 1; i < marks.length; i++) gap = Math.max(gap, marks[i]! - marks[i - 1]!);
    // Announced during the build: the wait to each one's signature (still unsigned: until now).
    let wait = 0;
    let announced = 0;
    for (const [id, at] of released) {
      if (at < buildStart || at > buildEnd) continue;
      announced++;
      wait = Math.max(wait, (accepted.get(id) ?? now()) - at);
    }
    return {
      result: result!,
      beside: {
        batch_every_s: opts.batchEveryS,
        budget_mib: opts.budgetMib,
        vaults_a_batch: opts.vaultsABatch,
        batches_prepared: opts.batches,
        signed_during_build: signs.length,
        announced_during_build: announced,
        longest_gap_s: gap / 1000,
        longest_wait_s: wait / 1000,
        daemon_rss_before_mib: Math.round(before.rss),
        daemon_peak_rss_mib: Math.round(peak),
        daemon_peak_anon_mib: Math.round(peakAnon),
        ran_out: ranOutAt !== undefined && ranOutAt < buildEnd,
      },
    };
  } finally {
    if (timer) clearInterval(timer);
    if (daemon && daemon.exitCode === null) {
      const gone = new Promise((r) => daemon!.once("exit", r));
      daemon.kill("SIGTERM");
      await gone;
    }
    gateway?.kill();
    await rm(bodies, { recursive: true, force: true });
  }
}
