import { fork, type ChildProcess } from "node:child_process";
import { chmod, cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { startDaemon, type Daemon } from "../src/app.js";
import { loadConfig } from "../src/config/config.js";
import { ordersJson, vaultsJson } from "../src/devnet/serialize.js";
import type { HashEngine } from "../src/verifier/hash/engine.js";
import { createEngine } from "../src/verifier/hash/select.js";
import { createLogger } from "../src/logging.js";
import { verifySignAndStore } from "../src/poller/member/batch-stages.js";
import { warmTopNodes } from "../src/verifier/warm-cache.js";
import type { BatchTimes } from "../src/poller/member/prefetch.js";
import { EthSigner } from "../src/signer/eth-signer.js";
import { BULK_LOAD_WRITE_BUFFER } from "../src/storage/bulk-writer.js";
import { LevelStore } from "../src/storage/level-store.js";
import { createTopNodeCache } from "../src/verifier/trees/cache/node-cache.js";
import { loadWorkloadState, startProfile } from "./workloads.js";

/**
 * Catching up through the wire (`npm run bench -- --catchup`): the daemon as `dacd run` wires it
 * (startDaemon: the member's loop, undici, LevelDB, the claims journal), in this process, against a
 * gateway in a process of its own (catchup-gateway.ts) serving W-spot-sized batches as JSON over
 * HTTP, from the W-spot initial state. Timed from the gateway's first get_batch_data to its last
 * accepted signature; preparing the state and the batches is not timed.
 */

export interface CatchupResult {
  batches: number;
  /** Batches over the time from the first fetch to the last accepted signature. */
  batches_per_s: number;
  /** Batches after the first over the time from the first to the last accepted signature. */
  steady_batches_per_s: number;
  wall_s: number;
  /** Sums over the batches of each stage's time; fetch and parse overlap the previous batches' verification. */
  fetch_s: number;
  /** JSON parse (json_parse_s) and the typed parse of the leaves together. */
  parse_s: number;
  json_parse_s: number;
  /** Verification and signature, up to the batch's write being queued. */
  verify_s: number;
  /** The write's tail until it was durable, overlapping the next batch's verification. */
  store_s: number;
  post_s: number;
  /** Time the member waited for a batch that was not fetched and parsed yet when its turn came. */
  wait_s: number;
  /** The longest and the 99th-percentile event-loop delay while catching up (monitorEventLoopDelay). */
  event_loop_max_ms: number;
  event_loop_p99_ms: number;
  /** Event-loop turns longer than 50 ms: how many, and in which of the member's stages they fell. */
  stalls_over_50ms: {
    count: number;
    verify: number;
    store: number;
    post: number;
    other: number;
    longest_stage: string;
  };
  /** Bytes of one batch's get_batch_data answer (the largest). */
  body_mb: number;
  bulk_load_s: number;
  /** Computing the batches' roots on a copy of the store and writing the answers (untimed). */
  prepare_s: number;
  /**
   * Of prepare_s, the verification of the same batches from the same state by the bench itself (no
   * HTTP, no JSON, no daemon): what the batches cost on the machine as it was then.
   */
  prepare_verify_s: number;
  /** The daemon's node cache warm-up before the gateway announced the batches. */
  warm_s: number;
  /** This process's CPU (every thread: the member, its workers, LevelDB) per batch while catching up. */
  cpu_s_per_batch: number;
  /** The member's main thread busy per batch (event-loop utilization's active time). */
  main_thread_s_per_batch: number;
  /** One-minute load average before and after the timed part (the machine is shared). */
  load_avg: [number, number];
}

interface GatewayDone {
  firstFetchAt: number;
  acceptedAt: [number, number][];
  fetchedAt: [number, number][];
  posted: [number, string[]][];
}

const MEMBER_KEY = "0x" + "11".repeat(32);
const STALL_MS = 50;

/**
 * Records the event loop's turns longer than STALL_MS (a 5 ms timer that came late), to say in
 * which of the member's stages (from onBatchTimes: verify, store, post, or none) they fell.
 */
function stallRecorder(): { stop(): [number, number][] } {
  const stalls: [number, number][] = [];
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    if (now - last > STALL_MS + 5) stalls.push([last, now]);
    last = now;
  }, 5);
  return {
    stop() {
      clearInterval(timer);
      return stalls;
    },
  };
}

/**
 * Writes the stalls beside the CPU profile (`PROFILE.stalls.json`), in the profile's clock (µs of
 * the monotonic clock, as process.hrtime), for profile-summary to say what ran during them.
 */
async function writeStallWindows(profile: string, stalls: [number, number][]): Promise<void> {
  const offsetUs = Number(process.hrtime.bigint() / 1000n) - performance.now() * 1000;
  const windows = stalls.map(([from, to]) => [from * 1000 + offsetUs, to * 1000 + offsetUs]);
  await writeFile(`${profile}.stalls.json`, JSON.stringify(windows));
}

/** Writes batches 1…count and their claims into `bodiesDir`, verified on a copy of the loaded store. */
async function prepareBatches(
  scratchDir: string,
  bodiesDir: string,
  engine: HashEngine,
  state: Awaited<ReturnType<typeof loadWorkloadState>>,
  count: number,
  log: (s: string) => void,
): Promise<{ largest: number; verifyS: number }> {
  const store = await LevelStore.open(scratchDir);
  let largest = 0;
  let verifyMs = 0;
  try {
    // 2^19 positions per tree, as `dacd replay` keeps (the daemon's depth is the memory plan's).
    const cache = createTopNodeCache(19);
    await warmTopNodes(cache, store, engine, state.trees, 0);
    const ctx = {
      profile: state.profile,
      engine,
      store,
      signer: new EthSigner(new Uint8Array(32).fill(7)),
      options: { validateOrders: true, validateRollup: true },
      topNodes: cache,
    };
    const claims: Record<number, string> = {};
    for (let id = 1; id <= count; id++) {
      const changes = state.nextChanges();
      // No stated roots: the verification computes and stores them, and they become the answer's.
      const verifying = performance.now();
      const { record } = await verifySignAndStore(ctx, id, {
        prevBatchId: id - 1,
        changes,
        statedRoots: {},
      });
      verifyMs += performance.now() - verifying;
      claims[id] = record.claim_hash;
      const body = JSON.stringify({
        update: {
          prev_batch_id: id - 1,
          vaults: vaultsJson(changes.vault),
          vault_root: record.roots.vault,
          orders: ordersJson(changes.order),
          order_root: record.roots.order,
          rollup_vaults: vaultsJson(changes.rollup_vault),
          rollup_vault_root: record.roots.rollup_vault,
        },
      });
      largest = Math.max(largest, Buffer.byteLength(body));
      await writeFile(join(bodiesDir, `${id}.json`), body);
      if (id % 10 === 0) log(`catchup: prepared ${id} of ${count} batches`);
    }
    await writeFile(join(bodiesDir, "claims.json"), JSON.stringify(claims));
  } finally {
    await store.close();
  }
  return { largest, verifyS: verifyMs / 1000 };
}

function startGateway(bodiesDir: string, count: number): Promise<{ child: ChildProcess; port: number }> {
  const child = fork(join(import.meta.dirname, "catchup-gateway.js"), [bodiesDir, String(count)], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  return new Promise((resolve, reject) => {
    child.once("message", (m: { port: number }) => resolve({ child, port: m.port }));
    child.once("exit", (code) => reject(new Error(`the bench gateway exited (${code})`)));
  });
}

interface Prepared {
  bulkLoadS: number;
  prepareS: number;
  prepareVerifyS: number;
  largest: number;
}

/**
 * The loaded state and the batches' answers (untimed), prepared here or, with `cacheDir`, taken from
 * an earlier run's copy there (kept there for the next run when there is none yet).
 */
async function prepare(
  root: string,
  opts: { quick: boolean; batches: number; cacheDir?: string; log: (s: string) => void },
): Promise<{ dataDir: string; bodiesDir: string } & Prepared> {
  const { log, batches: count, cacheDir } = opts;
  const dataDir = join(root, "data");
  const key = JSON.stringify({ quick: opts.quick, batches: count });
  const readyFile = cacheDir && join(cacheDir, "ready.json");
  if (cacheDir && readyFile) {
    const ready = await readFile(readyFile, "utf8").then(
      (t) => JSON.parse(t) as { key: string } & Prepared,
      () => undefined,
    );
    if (ready?.key === key) {
      await cp(join(cacheDir, "data"), dataDir, { recursive: true });
      log(`catchup: state and batches from ${cacheDir} (prepared by an earlier run)`);
      return { dataDir, bodiesDir: join(cacheDir, "bodies"), ...ready };
    }
  }
  const bodiesDir = join(root, "bodies");
  const scratchDir = join(root, "scratch");
  await mkdir(bodiesDir);
  const engine = createEngine("native", { threads: "auto" });
  try {
    // The 1M state (a tenth with --quick), as `dacd escape load` would leave it: batch 0, cursor at 1.
    const store = await LevelStore.open(dataDir, { writeBufferSize: BULK_LOAD_WRITE_BUFFER });
    const state = await loadWorkloadState("spot", store, engine, opts.quick);
    await store.batches.moveCursor({ kind: "loaded", record: (await store.getBatch(0))! });
    await store.close();
    log(`catchup: bulk load ${state.bulkLoadS.toFixed(1)} s`);
    const t0 = performance.now();
    await cp(dataDir, scratchDir, { recursive: true });
    const { largest, verifyS } = await prepareBatches(scratchDir, bodiesDir, engine, state, count, log);
    await rm(scratchDir, { recursive: true, force: true });
    const prepareS = (performance.now() - t0) / 1000;
    log(
      `catchup: ${count} batches prepared in ${prepareS.toFixed(1)} s, ${(largest / 2 ** 20).toFixed(1)} MB each`,
    );
    const prepared: Prepared = { bulkLoadS: state.bulkLoadS, prepareS, prepareVerifyS: verifyS, largest };
    if (cacheDir && readyFile) {
      await rm(cacheDir, { recursive: true, force: true });
      await cp(dataDir, join(cacheDir, "data"), { recursive: true });
      await cp(bodiesDir, join(cacheDir, "bodies"), { recursive: true });
      await writeFile(readyFile, JSON.stringify({ key, ...prepared }));
    }
    return { dataDir, bodiesDir, ...prepared };
  } finally {
    // The daemon creates its own engine; this one's tables are not needed while it runs.
    await engine.close?.();
  }
}

export async function runCatchup(opts: {
  quick: boolean;
  batches: number;
  /** Where to keep the prepared state and batches for the next run (`--catchup-cache DIR`). */
  cacheDir?: string;
  /** Writes a CPU profile of this thread (the member's) while catching up to this file. */
  cpuProfile?: string;
  /** The member's `node_cache_levels` (`--cache-levels N`); unset: the member's default. */
  cacheLevels?: number;
  log: (s: string) => void;
}): Promise<CatchupResult> {
  const { log, batches: count } = opts;
  const root = await mkdtemp(join(tmpdir(), "dacd-bench-catchup-"));
  let gateway: ChildProcess | undefined;
  let daemon: Daemon | undefined;
  try {
    const { dataDir, bodiesDir, bulkLoadS, prepareS, prepareVerifyS, largest } = await prepare(root, opts);

    const gw = await startGateway(bodiesDir, count);
    gateway = gw.child;
    const done = new Promise<GatewayDone>((resolve) =>
      gw.child.on("message", (m: { done?: GatewayDone }) => m.done && resolve(m.done)),
    );
    await writeFile(join(root, "member.key"), MEMBER_KEY + "\n");
    await chmod(join(root, "member.key"), 0o600);
    const url = `http://127.0.0.1:${gw.port}`;
    const yaml = [
      "profile: spot",
      `availability_gateway_url: "${url}"`,
      `feeder_gateway_url: "${url}"`,
      "private_key_path: member.key",
      `data_dir: ${dataDir}`,
      "polling_interval_s: 0.1",
      "http_request_timeout_s: 60",
      "validate_rollup: true",
      ...(opts.cacheLevels === undefined ? [] : [`node_cache_levels: ${opts.cacheLevels}`]),
    ].join("\n");
    await writeFile(join(root, "dacd.yaml"), yaml + "\n");

    let warmed: () => void = () => undefined;
    const warm = new Promise<void>((resolve) => (warmed = resolve));
    const times = new Map<number, BatchTimes>();
    // Each batch's verify, store and post intervals (performance.now()), reconstructed when it is
    // reported; a batch's store and post overlap the next batch's verification, which is listed
    // first so that a stall is put down to it.
    const stages: { stage: "verify" | "store" | "post"; from: number; to: number }[] = [];
    const lines = {
      write(line: string): void {
        if (line.includes('"node cache warmed"')) warmed();
        if (line.includes('"level":"error"')) log(`catchup: dacd: ${line.trim()}`);
      },
    };
    const started = performance.now();
    daemon = await startDaemon(loadConfig(join(root, "dacd.yaml"), {}), {
      log: createLogger({ level: "info", destination: lines }),
      events: {
        onBatchTimes: (id, t) => {
          times.set(id, t);
          const end = performance.now();
          const verified = end - t.postMs - t.storeMs;
          stages.unshift({ stage: "verify", from: verified - t.verifyMs, to: verified });
          stages.push({ stage: "store", from: verified, to: end - t.postMs });
          stages.push({ stage: "post", from: end - t.postMs, to: end });
        },
      },
    });
    await warm;
    const warmS = (performance.now() - started) / 1000;
    log(`catchup: daemon started, node cache warmed in ${warmS.toFixed(1)} s`);

    const loadBefore = loadavg()[0]!;
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const stallRec = stallRecorder();
    const profiler = opts.cpuProfile ? await startProfile("cpu") : undefined;
    const cpuBefore = process.cpuUsage();
    const eluBefore = performance.eventLoopUtilization();
    gw.child.send({ open: true });
    const result = await done;
    const elu = performance.eventLoopUtilization(eluBefore);
    const cpu = process.cpuUsage(cpuBefore);
    await profiler?.stopInto(opts.cpuProfile!);
    delay.disable();
    const stalls = stallRec.stop();
    if (opts.cpuProfile) await writeStallWindows(opts.cpuProfile, stalls);
    const loadAfter = loadavg()[0]!;
    await daemon.stop();
    daemon = undefined;

    for (const [id, claims] of result.posted) {
      if (new Set(claims).size !== 1)
        throw new Error(`batch ${id} was posted with ${new Set(claims).size} claims`);
    }
    const accepted = result.acceptedAt.map(([, at]) => at).sort((a, b) => a - b);
    const wallS = (accepted.at(-1)! - result.firstFetchAt) / 1000;
    const sum = (pick: (t: BatchTimes) => number): number =>
      [...times.values()].reduce((s, t) => s + pick(t), 0) / 1000;
    const stageOf = ([from, to]: [number, number]): string =>
      stages.find((s) => s.from <= (from + to) / 2 && (from + to) / 2 <= s.to)?.stage ?? "other";
    const stallStages = stalls.map(stageOf);
    const longest = stalls.reduce((best, s, i) => (s[1] - s[0] > best.ms ? { ms: s[1] - s[0], i } : best), {
      ms: 0,
      i: -1,
    });
    const out: CatchupResult = {
      batches: count,
      batches_per_s: count / wallS,
      steady_batches_per_s: (count - 1) / ((accepted.at(-1)! - accepted[0]!) / 1000),
      wall_s: wallS,
      fetch_s: sum((t) => t.fetchMs),
      parse_s: sum((t) => t.jsonParseMs + t.parseMs),
      json_parse_s: sum((t) => t.jsonParseMs),
      verify_s: sum((t) => t.verifyMs),
      store_s: sum((t) => t.storeMs),
      post_s: sum((t) => t.postMs),
      wait_s: sum((t) => t.waitMs),
      event_loop_max_ms: delay.max / 1e6,
      event_loop_p99_ms: delay.percentile(99) / 1e6,
      stalls_over_50ms: {
        count: stalls.length,
        verify: stallStages.filter((s) => s === "verify").length,
        store: stallStages.filter((s) => s === "store").length,
        post: stallStages.filter((s) => s === "post").length,
        other: stallStages.filter((s) => s === "other").length,
        longest_stage: longest.i >= 0 ? stallStages[longest.i]! : "none",
      },
      body_mb: largest / 2 ** 20,
      bulk_load_s: bulkLoadS,
      prepare_s: prepareS,
      prepare_verify_s: prepareVerifyS,
      warm_s: warmS,
      cpu_s_per_batch: (cpu.user + cpu.system) / 1e6 / count,
      main_thread_s_per_batch: elu.active / 1000 / count,
      load_avg: [loadBefore, loadAfter],
    };
    if (times.size !== count) throw new Error(`timed ${times.size} batches of ${count}`);
    const each = [...times.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(
        ([id, t]) =>
          `${id}: wait ${t.waitMs.toFixed(0)} verify ${t.verifyMs.toFixed(0)} store ${t.storeMs.toFixed(0)} post ${t.postMs.toFixed(0)} (fetch ${t.fetchMs.toFixed(0)} json ${t.jsonParseMs.toFixed(0)} parse ${t.parseMs.toFixed(0)})`,
      );
    log(`catchup: per batch (ms): ${each.join("; ")}`);
    return out;
  } finally {
    await daemon?.stop();
    gateway?.kill();
    await rm(root, { recursive: true, force: true });
  }
}

/** The bench's table for the catch-up run, as printed. */
export function printCatchup(r: CatchupResult, quick: boolean): void {
  console.log(
    `\nCatch-up through the wire${quick ? " (--quick: a tenth of the state and of each batch)" : ""}: dacd's member against a local HTTP gateway, ${r.batches} W-spot batches of ${r.body_mb.toFixed(1)} MB JSON`,
  );
  console.log(
    "| batches/s | steady batches/s | wall s | fetch s | parse s (JSON) | verify s | store s | post s | waiting s | event loop max ms (p99) | load avg before/after |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|---|---|");
  console.log(
    `| ${r.batches_per_s.toFixed(2)} | ${r.steady_batches_per_s.toFixed(2)} | ${r.wall_s.toFixed(1)} | ${r.fetch_s.toFixed(1)} | ${r.parse_s.toFixed(1)} (${r.json_parse_s.toFixed(1)}) | ${r.verify_s.toFixed(1)} | ${r.store_s.toFixed(1)} | ${r.post_s.toFixed(1)} | ${r.wait_s.toFixed(1)} | ${r.event_loop_max_ms.toFixed(0)} (${r.event_loop_p99_ms.toFixed(0)}) | ${r.load_avg.map((l) => l.toFixed(2)).join(" / ")} |`,
  );
  console.log(
    `CPU per batch: ${r.cpu_s_per_batch.toFixed(2)} s in all (the member's main thread busy ${r.main_thread_s_per_batch.toFixed(2)} s; the gateway's process not counted)`,
  );
  const st = r.stalls_over_50ms;
  console.log(
    `event-loop turns over 50 ms: ${st.count} (during a verification ${st.verify}, a write's tail ${st.store}, a post ${st.post}, neither ${st.other}; the longest during ${st.longest_stage})`,
  );
  if (r.prepare_verify_s !== undefined)
    console.log(
      `the same batches verified by the bench alone (verifySignAndStore, no HTTP, no JSON, no daemon) when they were prepared: ${r.prepare_verify_s.toFixed(1)} s, ${(r.prepare_verify_s / r.batches).toFixed(2)} s a batch`,
    );
  console.log(
    "(fetch and parse are sums over the batches and overlap the verification of earlier ones; store (a batch's write until durable) and post overlap the verification of the next; waiting is the time the member waited for a batch not yet fetched and parsed)",
  );
}
