import type { Server } from "node:http";
import { buildInfo } from "./build-info.js";
import type { Config } from "./config/config.js";
import { startEscapeApi, type EscapeApi } from "./api/escape-api.js";
import { escapeRoutes } from "./control/escape-routes.js";
import { exitSettings } from "./escape/exit/settings.js";
import { startControlServer } from "./control/server.js";
import { DacdError } from "./errors.js";
import { showBatchOnchain, showLeaf, storeStatus } from "./inspect/inspect.js";
import type { Logger } from "./logging.js";
import { escapeJobs } from "./service/maintenance-jobs.js";
import { listenOpsServer, type OpsListener } from "./service/http-server.js";
import { DacdMetrics, type MetricsState } from "./service/metrics.js";
import { memoryPlanFor } from "./service/memory-setup.js";
import { describePlan, type MemoryPlan } from "./config/memory-plan.js";
import {
  memberMetricsState,
  startOperations,
  type JobImplementations,
  type Operations,
} from "./service/operations.js";
import {
  AvailabilityGateway,
  FeederGateway,
  type HttpClientOptions,
} from "./poller/gateway/gateway-client.js";
import { Member } from "./poller/member/member.js";
import { mergeMemberEvents, type MemberEvents } from "./poller/member/member-events.js";
import { discardMemberKey, loadMemberKey, signerFor } from "./service/member-signer.js";
import type { Signer } from "./signer/signer.js";
import { Pkcs11Signer } from "./signer/pkcs11/pkcs11-signer.js";
import { LevelStore } from "./storage/level-store.js";
import {
  levelBindingName,
  mappedTablesInEffect,
  setMappedTables,
  setRandomReads,
} from "./storage/level-binding.js";
import { runConfigChecks, runStoreChecks } from "./service/startup-checks.js";
import { openFileLimit, tableFilesWithinLimit } from "./storage/open-files.js";
import { openMemberJournal } from "./storage/member-journal.js";
import type { ClaimsJournal } from "./storage/claims-journal.js";
import { resolveChainKind } from "./storage/chain-pin.js";
import type { HashEngine } from "./verifier/hash/engine.js";
import { chooseTreeWalk, treeWalkName, type TreeWalk } from "./verifier/trees/update/tree-walk.js";
import { nativeNodeCacheAddon } from "./verifier/trees/native/native-node-cache.js";
import { runtimeSettings } from "./config/runtime-settings.js";
import { createEngine } from "./verifier/hash/select.js";
import { keptTrees, makeProfile, type Profile } from "./model/profile.js";
import { createTopNodeCache, type TopNodeCache } from "./verifier/trees/cache/node-cache.js";
import { placeBranchTops, warmNodeCache } from "./verifier/warm-cache.js";
import { CacheSnapshotWriter } from "./verifier/cache-snapshot-writer.js";
import { snapshotPath } from "./verifier/trees/cache/cache-snapshot.js";
import { asStoreError } from "./storage/store-errors.js";
import { bindVerifyContext } from "./verifier/verify-batch.js";
import type { StageContext } from "./poller/member/batch-stages.js";
import { ChainWatch } from "./chain/watch.js";
import { getOrdersMissing, ordersMissingWarning } from "./escape/reference-store.js";
import { Closers } from "./util/closers.js";

/**
 * The one place where dacd's parts are created and wired together for `dacd run`. Everything that
 * can be wrong with the setup (key, store, gateway) is found here, before the loop starts, and
 * reported as one DacdError line.
 */
export interface Daemon {
  readonly member: Member;
  readonly profile: Profile;
  readonly store: LevelStore;
  readonly engine: HashEngine;
  readonly signer: Signer;
  readonly availability: AvailabilityGateway;
  readonly feeder: FeederGateway | undefined;
  /** Prometheus metrics (served on metrics_port when it is set). */
  readonly metrics: DacdMetrics;
  /** Metrics/health listener, scheduled jobs, systemd notifications. */
  readonly ops: Operations;
  /** The read-only escape API, when escape_api_port is set. */
  readonly escapeApi?: EscapeApi;
  /** The base-chain watch, when base_chain_rpc_url is set. */
  readonly chainWatch?: ChainWatch;
  /** Resolves when the run loop has stopped (after `stop()`). */
  readonly done: Promise<void>;
  stop(): Promise<void>;
}

export interface DaemonOptions {
  readonly log: Logger;
  readonly allowInsecureKeyFile?: boolean;
  readonly events?: MemberEvents;
  /** Attempts for each gateway call in the loop (default from the client). */
  readonly retryAttempts?: number;
  /** Environment for systemd notifications (default: the one dacd started with, runtime-settings.ts). */
  readonly env?: NodeJS.ProcessEnv;
}

export async function startDaemon(config: Config, opts: DaemonOptions): Promise<Daemon> {
  const closers = new Closers();
  try {
    return await startSteps(config, opts, closers);
  } catch (err) {
    await closers.close().catch(() => undefined);
    throw err;
  }
}

/**
 * The start-up, step by step. Each step that acquires something (the listener, the key, the
 * engine, the store, a server, the run loop) pushes how to let it go onto `closers`: a step that
 * fails unwinds what the steps before it acquired, and `stop()` unwinds everything, the newest
 * first. The pushes are placed so that a stop lets go in this order: operations, escape API, run
 * loop, chain watch, control socket, gateway clients, store and journal, engine, key.
 */
async function startSteps(config: Config, opts: DaemonOptions, closers: Closers): Promise<Daemon> {
  const { log } = opts;
  const listener = await bindOpsListener(config, closers);
  for (const w of config.warnings) log.warn(w);
  // Filled in as the parts they call exist: a token's failures are counted once the metrics
  // exist, and the metrics read the member's state once there is a member.
  const late: LateHooks = {};
  const key = await loadKey(config, opts, late, closers);

  const profile = makeProfile(config.profile, config.heights);
  const validateRollup = profile.rollup ? config.validateRollup : undefined;
  // Scheduled integrity check (light scan + deep check of the newest trees) and pruning; they
  // hash with the engine created below, uncounted by the metrics.
  const engines: { base?: HashEngine } = {};
  const jobImplementations: JobImplementations = escapeJobs(() => engines.base!);
  // The same checks as `dacd config check` (service/startup-checks.ts).
  await runConfigChecks(config, { createDataDir: true, jobs: jobImplementations });
  const metrics = createMetrics(config, late);

  const abort = new AbortController();
  const gateways = gatewayClients(config, opts, profile, metrics, abort.signal);
  // The base chain decides the signature scheme; ask before anything is signed (the answer must
  // match the kind pinned at the first start).
  const gatewayChain = await chainKind(config, log);
  const { baseEngine, engine, treeWalk } = startEngine(config, log, metrics, closers);
  engines.base = baseEngine;
  const { store, memory, journalSlot } = await openStore(
    config,
    log,
    profile,
    validateRollup,
    gateways,
    closers,
  );
  const { ctx, signer } = await bindStages(config, log, {
    store,
    key,
    profile,
    validateRollup,
    engine,
    treeWalk,
    memory,
    metrics,
    journalSlot,
    gatewayChain,
  });
  const snapshots = snapshotWriter(config, ctx, closers, log);
  const chainWatch = baseChainWatch(config, profile.main.name, store, metrics, log);
  const member = createMember(config, opts, ctx, gateways, metrics, chainWatch);
  late.metricsState = await metricsStateOf(config, store, member, chainWatch);

  const control = await startControl(config, store, engine, baseEngine, member, signer);
  closers.defer(() => control.close());
  if (chainWatch) closers.defer(() => chainWatch.stop());
  // The run loop starts further down; stopped before the chain watch, once the escape API is closed.
  const loop: { done?: Promise<void> } = {};
  closers.defer(async () => {
    abort.abort(new DacdError("GATEWAY", "shutting down"));
    await loop.done?.catch(() => undefined);
  });
  const escapeApi = await escapeApiFor(config, store, baseEngine, metrics, log);
  if (escapeApi) closers.defer(() => escapeApi.close());
  announceStart(config, log, metrics, { profile, signer, engine, treeWalk });
  await startRunLoop(ctx, member, chainWatch, snapshots, baseEngine, { signal: abort.signal, loop }, log);
  const done = loop.done!;
  const operations: Operations = await startOperations({
    config,
    log,
    store,
    member,
    metrics,
    jobs: jobImplementations,
    env: opts.env,
    listener: listener.server,
  });
  // From here the operations close the listener and the signer closes the key.
  listener.handOver();
  key.handOver(signer);
  closers.defer(() => operations.stop());
  return {
    member,
    profile,
    store,
    engine,
    signer,
    availability: gateways.availability,
    feeder: gateways.feeder,
    metrics,
    ops: operations,
    escapeApi,
    chainWatch,
    done,
    stop: () => closers.close(),
  };
}

/** Hooks of early parts into parts created later (startSteps). */
interface LateHooks {
  countSignerError?: () => void;
  metricsState?: () => MetricsState;
}

/**
 * Bound first: a port in use is one line and exit 78 before the key is read or anything signed.
 * Closed on a failed start until the operations take it over (their stop closes it).
 */
async function bindOpsListener(
  config: Config,
  closers: Closers,
): Promise<{ server: OpsListener | undefined; handOver(): void }> {
  const server =
    config.metricsPort !== undefined
      ? await listenOpsServer({ host: config.metricsHost, port: config.metricsPort })
      : undefined;
  let owned = true;
  closers.defer(async () => {
    if (owned) await server?.close();
  });
  return { server, handOver: () => (owned = false) };
}

/** The member key, discarded on a failed start; once the daemon runs, its signer is closed instead. */
async function loadKey(
  config: Config,
  opts: DaemonOptions,
  late: LateHooks,
  closers: Closers,
): Promise<{ key: Awaited<ReturnType<typeof loadMemberKey>>; handOver(signer: Signer): void }> {
  const key = await loadMemberKey(config, {
    allowInsecureKeyFile: opts.allowInsecureKeyFile,
    warn: (m) => opts.log.warn(m),
    // The run loop logs the failed batch with the error; here it is only counted.
    onSignerError: () => late.countSignerError?.(),
  });
  let close = (): Promise<void> => discardMemberKey(key);
  closers.defer(() => close());
  return {
    key,
    handOver: (signer) => {
      close = async () => signer.close?.();
    },
  };
}

/**
 * Created before the gateway clients, the engine and the run loop so that they can report to it; it
 * reads the member's state at scrape time.
 */
function createMetrics(config: Config, late: LateHooks): DacdMetrics {
  const metrics = new DacdMetrics({
    dataDir: config.dataDir,
    state: () => late.metricsState?.() ?? { ready: false, gatewayReachable: true },
    processDefaults: config.metricsPort !== undefined,
  });
  late.countSignerError = () => metrics.signerErrors.inc();
  return metrics;
}

/**
 * The hash engine (DACD_HASH_ENGINE overrides the configured one: loadConfig; large tree levels go
 * to a worker pool), counted by the metrics, and the tree walk.
 */
function startEngine(
  config: Config,
  log: Logger,
  metrics: DacdMetrics,
  closers: Closers,
): { baseEngine: HashEngine; engine: HashEngine; treeWalk: TreeWalk } {
  const settings = runtimeSettings();
  const baseEngine = createEngine(config.hashEngine, {
    warn: (m) => log.warn(m),
    threads: "auto",
    kernel: settings.hashKernel,
  });
  const engine = metrics.countingEngine(baseEngine);
  closers.defer(() => engine.close?.());
  return { baseEngine, engine, treeWalk: chooseTreeWalk(settings.treeWalk) };
}

/**
 * The store, opened by the memory plan and checked. Its closer also closes the claims journal
 * (opened after the store, by bindStages, into `journalSlot`), after it; the gateway clients close
 * before both.
 */
async function openStore(
  config: Config,
  log: Logger,
  profile: Profile,
  validateRollup: boolean | undefined,
  gateways: ReturnType<typeof gatewayClients>,
  closers: Closers,
): Promise<{ store: LevelStore; memory: MemoryPlan; journalSlot: { journal?: ClaimsJournal } }> {
  const memory = await memoryPlanFor(config, keptTrees(profile, validateRollup).length);
  log.info({ memory }, describePlan(memory));
  applyMappedTables(memory, log);
  const store = await LevelStore.open(config.dataDir, {
    maxOpenFiles: memory.store_max_open_files,
    cacheSize: memory.store_block_cache_mib * 2 ** 20,
  });
  const journalSlot: { journal?: ClaimsJournal } = {};
  closers.defer(async () => {
    await store.close();
    await journalSlot.journal?.close();
  });
  closers.defer(() => Promise.allSettled([gateways.availability.close(), gateways.feeder?.close()]));
  warnOnOpenFiles(memory, log);
  await runStoreChecks(config, store);
  return { store, memory, journalSlot };
}

/**
 * What the batches' stages need (poller/member/batch-stages.ts): the verifier's options and node
 * cache, the claims journal, and the signer of the chain kind the store, the journal and the gateway
 * agree on.
 */
async function bindStages(
  config: Config,
  log: Logger,
  parts: {
    store: LevelStore;
    key: { key: Awaited<ReturnType<typeof loadMemberKey>> };
    profile: Profile;
    validateRollup: boolean | undefined;
    engine: HashEngine;
    treeWalk: TreeWalk;
    memory: MemoryPlan;
    metrics: DacdMetrics;
    journalSlot: { journal?: ClaimsJournal };
    gatewayChain: "ethereum" | "starknet";
  },
): Promise<{ ctx: StageContext & { topNodes: TopNodeCache }; signer: Signer }> {
  const { store, profile, memory } = parts;
  // A store imported without its order tree cannot validate orders: told at every start.
  const ordersMissing = (await getOrdersMissing(store)) !== undefined;
  const ordersWarning = await ordersMissingWarning(store, config.acceptMissingOrders);
  if (ordersWarning) log.warn(ordersWarning);
  const journal = (parts.journalSlot.journal = await openMemberJournal(config, store, {
    log,
    onConflict: () => parts.metrics.conflictingClaims.inc(),
  }));
  const kind = await resolveChainKind(store.meta, {
    configured: config.chain,
    journal: journal.signatureKind,
    gateway: parts.gatewayChain,
  });
  const signer: Signer = signerFor(parts.key.key, kind);
  const ctx = await bindVerifyContext(store, {
    profile,
    engine: parts.engine,
    signer,
    options: {
      validateOrders: config.validateOrders && !ordersMissing,
      validateRollup: parts.validateRollup,
      signAfterFreeze: config.signAfterFreeze,
    },
    topNodes: createTopNodeCache(
      memory.node_cache_levels,
      nativeNodeCacheAddon(runtimeSettings().nodeCache),
      memory.node_cache_nodes,
    ),
    claims: journal,
    treeWalk: parts.treeWalk,
  });
  return { ctx, signer };
}

/** The node cache's snapshot, saved at a stop once the run loop has stopped, before the store closes. */
function snapshotWriter(
  config: Config,
  ctx: StageContext & { topNodes: TopNodeCache },
  closers: Closers,
  log: Logger,
): CacheSnapshotWriter {
  const snapshots = new CacheSnapshotWriter(
    ctx.topNodes,
    ctx.store,
    keptTrees(ctx.profile, ctx.options.validateRollup).map((t) => t.name),
    snapshotPath(config.dataDir),
    log,
  );
  // The closers run newest first.
  closers.defer(() => snapshots.stop());
  return snapshots;
}

/** The run loop, reporting to the metrics, the caller's hooks and the base-chain watch. */
function createMember(
  config: Config,
  opts: DaemonOptions,
  ctx: StageContext,
  gateways: ReturnType<typeof gatewayClients>,
  metrics: DacdMetrics,
  chainWatch: ChainWatch | undefined,
): Member {
  return new Member(
    ctx,
    gateways.availability,
    gateways.feeder,
    opts.log,
    {
      pollIntervalMs: config.pollingIntervalS * 1000,
      validateRollup: ctx.options.validateRollup,
      mode: config.mode,
      prefetchBatches: config.prefetchBatches,
    },
    mergeMemberEvents(
      metrics.memberEvents(),
      opts.events,
      chainWatch && { onSigned: (record) => chainWatch.stored(record) },
    ),
  );
}

/** What the metrics read of the member (and of the base-chain watch) at scrape time. */
async function metricsStateOf(
  config: Config,
  store: LevelStore,
  member: Member,
  chainWatch: ChainWatch | undefined,
): Promise<() => MetricsState> {
  const started = (await storeStatus(store)).last_signed_batch;
  const memberState = memberMetricsState(member, config, {
    lastSignedBatchId: started?.batch_id,
    lastSignedAtMs: started?.accepted_at ? Date.parse(started.accepted_at) : undefined,
  });
  if (!chainWatch) return memberState;
  return () => ({
    ...memberState(),
    onchain: {
      batchId: chainWatch.state?.last?.batch_id,
      frozen: chainWatch.state?.frozen !== undefined,
      block: chainWatch.state?.last_block?.number,
    },
  });
}

/**
 * Starts the run loop (after placing the cache's branch tops; `run.loop.done` is its end, awaited
 * by the stop), the base-chain watch beside it, and the node cache's warm-up in the background.
 */
async function startRunLoop(
  ctx: StageContext & { topNodes: TopNodeCache },
  member: Member,
  chainWatch: ChainWatch | undefined,
  snapshots: CacheSnapshotWriter,
  baseEngine: HashEngine,
  run: { signal: AbortSignal; loop: { done?: Promise<void> } },
  log: Logger,
): Promise<void> {
  const { store } = ctx;
  const trees = keptTrees(ctx.profile, ctx.options.validateRollup);
  // Where each tree's cached levels start, before the first batch (a read per level of its top path).
  await placeBranchTops(ctx.topNodes, store, baseEngine, trees).catch((err: unknown) => {
    // A damaged store met here is named as the member names it when a batch meets it.
    throw asStoreError(err, store.dir) ?? err;
  });
  run.loop.done = member.run(run.signal);
  // Beside the member, never in its way: its RPC calls and small writes run between batches.
  await chainWatch?.start();
  warmInBackground(ctx.topNodes, store, baseEngine, trees, snapshots, log);
}

/**
 * In the background: the first batches find the top levels in memory, and the start is not
 * delayed. From the snapshot a clean stop saved when it fits the store, else by walking the trees
 * (and then saved once, so that a crash later still leaves one). Once it is done, the reads below
 * the cache are lookups at random places: no read-ahead for them.
 */
function warmInBackground(
  topNodes: TopNodeCache,
  store: LevelStore,
  baseEngine: HashEngine,
  trees: ReturnType<typeof keptTrees>,
  snapshots: CacheSnapshotWriter,
  log: Logger,
): void {
  warmNodeCache(topNodes, store, baseEngine, trees, snapshots.file)
    .then(
      (warmed) => {
        if (warmed.refused)
          log.info({ reason: warmed.refused }, `node cache snapshot not used: ${warmed.refused}`);
        if (warmed.batchesBehind)
          log.info(
            { batches_behind: warmed.batchesBehind },
            `node cache snapshot is ${warmed.batchesBehind} batches older than the store`,
          );
        log.info(
          {
            nodes: warmed.nodes,
            ms: warmed.ms,
            source: warmed.source,
            ...(warmed.walked && { walked: warmed.walked }),
          },
          "node cache warmed",
        );
        snapshots.markWarm();
        if (warmed.source === "walk") snapshots.writeInBackground();
      },
      (err: unknown) => log.warn({ err }, "node cache warm-up stopped"),
    )
    .finally(() => setRandomReads());
}

/** The gateway clients of the run loop, retrying and reporting to the metrics, stopped by `signal`. */
function gatewayClients(
  config: Config,
  opts: DaemonOptions,
  profile: Profile,
  metrics: DacdMetrics,
  signal: AbortSignal,
): { availability: AvailabilityGateway; feeder: FeederGateway | undefined } {
  const http = (baseUrl: string): HttpClientOptions => ({
    baseUrl,
    timeoutMs: config.httpRequestTimeoutS * 1000,
    deadlineMs: config.httpRequestDeadlineS * 1000,
    maxBodyBytes: config.maxResponseBytes,
    retry: opts.retryAttempts ? { attempts: opts.retryAttempts } : undefined,
    tls: config.certificatesPath ? { certificatesPath: config.certificatesPath } : undefined,
    signal,
    onRetry: (endpoint, attempt, reason, delayMs) => {
      metrics.onRetry(endpoint);
      opts.log.warn({ endpoint, attempt, delay_ms: delayMs }, `retrying ${endpoint}: ${reason}`);
    },
    onResult: metrics.onResult,
  });
  return {
    availability: new AvailabilityGateway(http(config.availabilityGatewayUrl)),
    feeder: config.feederGatewayUrl
      ? new FeederGateway({ ...http(config.feederGatewayUrl), variant: profile.variant })
      : undefined,
  };
}

/** The memory plan's mapped tables, set before the store opens (warned about when they cannot take effect). */
function applyMappedTables(memory: MemoryPlan, log: Logger): void {
  const mapped = setMappedTables(memory.store_mapped_tables);
  if (mapped !== "set")
    log.warn(
      { store_mapped_tables: memory.store_mapped_tables, mapped_tables: mappedTablesInEffect() },
      mapped === "unsupported"
        ? "store_mapped_tables needs dacd's build of LevelDB's binding (not loaded): LevelDB keeps its own number"
        : "store_mapped_tables is read once per process, and a store was opened here before: LevelDB keeps the number it has",
    );
}

/** A warning when the open-file limit leaves LevelDB fewer tables than the plan's store_max_open_files. */
function warnOnOpenFiles(memory: MemoryPlan, log: Logger): void {
  const tablesOpen = tableFilesWithinLimit(memory.store_max_open_files);
  if (tablesOpen < memory.store_max_open_files)
    log.warn(
      {
        store_max_open_files: memory.store_max_open_files,
        open_file_limit: openFileLimit(),
        tables_open: tablesOpen,
      },
      "store_max_open_files is more than the open-file limit leaves: LevelDB keeps fewer tables open (raise LimitNOFILE= in the unit)",
    );
}

/** The control socket: status, batch and leaf lookups, and the escape commands. */
function startControl(
  config: Config,
  store: LevelStore,
  engine: HashEngine,
  baseEngine: HashEngine,
  member: Member,
  signer: Signer,
): Promise<Server> {
  // Proofs, dumps and checks from snapshots, hashed with the uncounted engine (like the jobs).
  const escape = escapeRoutes(store, baseEngine);
  return startControlServer(config.dataDir, {
    "/status": async () => ({
      ...(await storeStatus(store)),
      mode: member.state.mode,
      member_key: signer.memberKey,
      signer: signerStatus(config, signer),
      engine: engine.name,
      runtime: member.state,
    }),
    "/batch": async (q) => showBatchOnchain(store, Number(q.get("id"))),
    "/leaf": async (q) =>
      showLeaf(
        store,
        engine,
        q.get("object") ?? "",
        q.get("id") ?? "",
        q.has("batch") ? Number(q.get("batch")) : undefined,
      ),
    ...escape,
  });
}

/** The read-only escape API when escape_api_port is set. */
async function escapeApiFor(
  config: Config,
  store: LevelStore,
  baseEngine: HashEngine,
  metrics: DacdMetrics,
  log: Logger,
): Promise<EscapeApi | undefined> {
  if (config.escapeApiPort === undefined) return undefined;
  const escapeApi = await startEscapeApi({
    host: config.escapeApiHost,
    port: config.escapeApiPort,
    store,
    engine: baseEngine,
    rateLimit: config.escapeApiRateLimit,
    maxConcurrency: config.escapeApiMaxConcurrency,
    connectionsPerAddress: config.escapeApiConnectionsPerAddress,
    connectionRate: config.escapeApiConnectionRate,
    contracts: config.escapeContracts,
    exit: exitSettings(config),
    observe: metrics.onEscapeApiRequest,
    observeRefused: metrics.onEscapeApiConnectionRefused,
  });
  log.info({ url: escapeApi.url }, "escape API listening");
  return escapeApi;
}

/** What runs, with which key, engine, walk and store: in the metrics' info and mode, and the start-up line. */
function announceStart(
  config: Config,
  log: Logger,
  metrics: DacdMetrics,
  parts: { profile: Profile; signer: Signer; engine: HashEngine; treeWalk: TreeWalk },
): void {
  const { profile, signer, engine, treeWalk } = parts;
  const build = buildInfo();
  metrics.setInfo({
    profile: profile.name,
    chain: signer.chainKind,
    member_key: signer.memberKey,
    engine: engine.name,
    version: build.version,
  });
  metrics.setMode(config.mode);
  log.info(
    {
      version: build.version,
      commit: build.commit,
      node: build.node,
      profile: profile.name,
      member_key: signer.memberKey,
      signer: signer.custody ?? "file",
      chain: signer.chainKind,
      engine: engine.name,
      tree_walk: treeWalkName(treeWalk),
      leveldb_binding: levelBindingName,
      mapped_tables: mappedTablesInEffect(),
      data_dir: config.dataDir,
      mode: config.mode,
    },
    config.mode === "shadow" ? "dacd started in shadow mode: nothing will be posted" : "dacd started",
  );
}

/** Which signer holds the member key, for `dacd status`: a file, or a token (and how it fares). */
function signerStatus(config: Config, signer: Signer): Record<string, unknown> {
  if (signer.custody !== "pkcs11") return { custody: "file" };
  return {
    custody: "pkcs11",
    token_label: config.pkcs11TokenLabel,
    key_label: config.pkcs11KeyLabel,
    ...(signer instanceof Pkcs11Signer ? { health: signer.health } : {}),
  };
}

/** The base-chain watch when the configuration names the chain, counting into the metrics. */
function baseChainWatch(
  config: Config,
  mainTree: string,
  store: LevelStore,
  metrics: DacdMetrics,
  log: Logger,
): ChainWatch | undefined {
  if (config.baseChainRpcUrl === undefined || config.starkexContractAddress === undefined) return undefined;
  return new ChainWatch({
    rpcUrl: config.baseChainRpcUrl,
    contract: config.starkexContractAddress,
    confirmations: config.baseChainConfirmations,
    pollIntervalMs: config.baseChainPollIntervalS * 1000,
    timeoutMs: config.httpRequestTimeoutS * 1000,
    mainTree,
    store,
    log: log.child({ component: "chain" }),
    events: {
      onRpcFailure: (reason) => metrics.onchainRpcFailures.inc({ reason }),
      onRootMismatch: () => metrics.onchainRootMismatches.inc(),
      onFreezeWithdrawn: () => metrics.onchainFreezeWithdrawn.inc(),
      onRejected: (reason) => metrics.onchainRejected.inc({ reason }),
    },
  });
}

/** Asks the gateway which base chain it settles on; an old gateway without the endpoint means Ethereum. */
async function chainKind(config: Config, log: Logger): Promise<"ethereum" | "starknet"> {
  const probe = new AvailabilityGateway({
    baseUrl: config.availabilityGatewayUrl,
    timeoutMs: config.httpRequestTimeoutS * 1000,
    retry: { attempts: 5, baseDelayMs: 300, maxDelayMs: 2000 },
    tls: config.certificatesPath ? { certificatesPath: config.certificatesPath } : undefined,
  });
  try {
    const name = await probe.getBlockchainType();
    if (/stark/i.test(name)) return "starknet";
    if (/eth/i.test(name)) return "ethereum";
    throw new DacdError(
      "CONFIG",
      `the availability gateway reports an unknown blockchain type ${JSON.stringify(name)}`,
    );
  } catch (err) {
    if (err instanceof DacdError && err.httpStatus === 404) {
      log.warn(
        "the availability gateway has no get_blockchain_type endpoint; assuming an Ethereum-kind chain",
      );
      return "ethereum";
    }
    if (err instanceof DacdError && err.code === "GATEWAY") {
      throw new DacdError(
        "GATEWAY",
        `the availability gateway ${config.availabilityGatewayUrl} is unreachable at start: ${err.message}`,
      );
    }
    throw err;
  } finally {
    await probe.close();
  }
}
