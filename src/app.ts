import { access, constants, mkdir } from "node:fs/promises";
import type { Server } from "node:http";
import type { Config } from "./config/config.js";
import { startControlServer } from "./control/server.js";
import { DacdError } from "./errors.js";
import { showBatch, showLeaf, storeStatus } from "./inspect/inspect.js";
import type { Logger } from "./logging.js";
import { AvailabilityGateway, FeederGateway, type HttpClientOptions } from "./poller/gateway-client.js";
import { Member, type MemberEvents } from "./poller/member.js";
import { createSigner } from "./signer/create-signer.js";
import { loadPrivateKey } from "./signer/key-file.js";
import type { Signer } from "./signer/signer.js";
import { LevelStore } from "./storage/level-store.js";
import type { HashEngine } from "./verifier/hash/engine.js";
import { createEngine } from "./verifier/hash/select.js";
import { keptTrees, makeProfile, type Profile } from "./verifier/profile.js";

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
}

export async function startDaemon(config: Config, opts: DaemonOptions): Promise<Daemon> {
  const { log } = opts;
  for (const w of config.warnings) log.warn(w);
  const profile = makeProfile(config.profile, config.heights);
  const validateRollup = profile.rollup ? config.validateRollup : undefined;

  const key = await loadPrivateKey(config.privateKeyPath, {
    passwordPath: config.privateKeyPasswordPath,
    allowInsecurePermissions: opts.allowInsecureKeyFile,
    warn: (m) => log.warn(m),
  });
  await ensureWritableDir(config.dataDir);

  const abort = new AbortController();
  const http = (baseUrl: string, attempts?: number): HttpClientOptions => ({
    baseUrl,
    timeoutMs: config.httpRequestTimeoutS * 1000,
    retry: attempts ? { attempts } : opts.retryAttempts ? { attempts: opts.retryAttempts } : undefined,
    tls: config.certificatesPath ? { certificatesPath: config.certificatesPath } : undefined,
    signal: abort.signal,
    onRetry: (endpoint, attempt, reason, delayMs) =>
      log.warn({ endpoint, attempt, delay_ms: delayMs }, `retrying ${endpoint}: ${reason}`),
  });
  const availability = new AvailabilityGateway(http(config.availabilityGatewayUrl));
  const feeder = config.feederGatewayUrl
    ? new FeederGateway({ ...http(config.feederGatewayUrl), variant: profile.variant })
    : undefined;

  // The base chain decides the signature scheme; ask before anything is signed.
  const signer = createSigner(await chainKind(config, log), key);
  key.fill(0);

  const engine = createEngine(process.env.DACD_HASH_ENGINE ?? "auto", { warn: (m) => log.warn(m) });
  const store = await LevelStore.open(config.dataDir);
  let control: Server | undefined;
  try {
    await store.ensureIdentity({
      profile: profile.name,
      heights: Object.fromEntries(keptTrees(profile, validateRollup).map((t) => [t.name, t.height])),
    });
    const ctx = {
      profile,
      engine,
      store,
      signer,
      options: { validateOrders: config.validateOrders, validateRollup },
    };
    const member = new Member(
      ctx,
      availability,
      feeder,
      log,
      { pollIntervalMs: config.pollingIntervalS * 1000, validateRollup },
      opts.events,
    );
    control = await startControlServer(config.dataDir, {
      "/status": async () => ({
        ...(await storeStatus(store)),
        member_key: signer.memberKey,
        engine: engine.name,
        runtime: member.state,
      }),
      "/batch": async (q) => showBatch(store, Number(q.get("id"))),
      "/leaf": async (q) =>
        showLeaf(
          store,
          engine,
          q.get("object") ?? "",
          q.get("id") ?? "",
          q.has("batch") ? Number(q.get("batch")) : undefined,
        ),
    });
    log.info(
      {
        profile: profile.name,
        member_key: signer.memberKey,
        chain: signer.chainKind,
        engine: engine.name,
        data_dir: config.dataDir,
      },
      "dacd started",
    );
    const done = member.run(abort.signal);
    let stopping: Promise<void> | undefined;
    const stop = (): Promise<void> =>
      (stopping ??= (async () => {
        abort.abort(new DacdError("GATEWAY", "shutting down"));
        await done.catch(() => undefined);
        control?.close();
        await Promise.allSettled([availability.close(), feeder?.close()]);
        await store.close();
        await engine.close?.();
      })());
    return { member, profile, store, engine, signer, availability, feeder, done, stop };
  } catch (err) {
    control?.close();
    await store.close();
    await engine.close?.();
    throw err;
  }
}

async function ensureWritableDir(dir: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await access(dir, constants.W_OK);
  } catch (err) {
    throw new DacdError("CONFIG", `data_dir ${dir} is not a writable directory: ${(err as Error).message}`);
  }
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
    if (err instanceof DacdError && /HTTP 404/.test(err.message)) {
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
