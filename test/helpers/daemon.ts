import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config/config.js";
import type { Config } from "../../src/config/config.js";
import { createLogger, type Logger } from "../../src/logging.js";
import { startDaemon, type Daemon } from "../../src/app.js";
import { VectorGateway } from "./vector-gateway.js";
import { loadChain, type Expected } from "./vectors.js";

/** A temp dir with a 0600 key file and a config for `profile` pointing at `gatewayUrl`. */
export async function memberSetup(opts: {
  profile: string;
  privateKey: string;
  gatewayUrl: string;
  feeder?: boolean;
  extra?: string;
  timeoutS?: number;
  /** Spot only: validate_rollup (default true); null leaves the key out. */
  validateRollup?: boolean | null;
}): Promise<{ dir: string; configPath: string; config: Config }> {
  const dir = await mkdtemp(join(tmpdir(), "dacd-member-"));
  await writeFile(join(dir, "member.key"), opts.privateKey + "\n");
  await chmod(join(dir, "member.key"), 0o600);
  const yaml = [
    `profile: ${opts.profile}`,
    `availability_gateway_url: "${opts.gatewayUrl}"`,
    opts.feeder ? `feeder_gateway_url: "${opts.gatewayUrl}"` : "",
    `private_key_path: member.key`,
    `data_dir: data`,
    `polling_interval_s: 0.05`,
    `http_request_timeout_s: ${opts.timeoutS ?? 2}`,
    opts.profile === "spot" && opts.validateRollup !== null
      ? `validate_rollup: ${opts.validateRollup ?? true}`
      : "",
    opts.extra ?? "",
  ].join("\n");
  const configPath = join(dir, "dacd.yaml");
  await writeFile(configPath, yaml + "\n");
  return { dir, configPath, config: loadConfig(configPath, {}) };
}

export async function startQuietDaemon(config: Config): Promise<Daemon> {
  return startDaemon(config, { log: createLogger({ level: "silent" }), retryAttempts: 2 });
}

/** A logger that keeps every line it writes, parsed, in `lines`: for tests that read a daemon's log. */
export function recordingLogger(level: "info" | "warn" = "info"): {
  log: Logger;
  lines: Record<string, unknown>[];
} {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({
    level,
    destination: { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) },
  });
  return { log, lines };
}

/**
 * Starts daemons on `config` one after another, all logging into one `lines` (recordingLogger);
 * each is stopped by `cleanups` if the test has not stopped it.
 */
export function loggedDaemons(
  cleanups: (() => Promise<void>)[],
  config: Config,
): { lines: Record<string, unknown>[]; start: () => Promise<Daemon> } {
  const { log, lines } = recordingLogger();
  const start = async () => {
    const daemon = await startDaemon(config, { log, env: {} });
    cleanups.push(() => daemon.stop());
    return daemon;
  };
  return { lines, start };
}

export async function waitFor(
  cond: () => boolean | Promise<boolean>,
  timeoutMs = 30_000,
  what = "condition",
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * The spot chain served by a VectorGateway (with `served` instead of the vectors' answers when
 * given) and a member set up against it with a feeder (and `extra` lines of configuration); both
 * are removed by the `cleanups` the test runs afterwards.
 */
export async function spotChainMember(
  cleanups: (() => Promise<void>)[],
  served?: { update: unknown }[],
  extra?: string,
): Promise<{ gw: VectorGateway; expected: Expected; setup: Awaited<ReturnType<typeof memberSetup>> }> {
  const { responses, expected } = loadChain("spot-chain");
  const gw = await new VectorGateway(served ?? responses, expected, "G").start();
  cleanups.push(() => gw.close());
  const setup = await memberSetup({
    profile: "spot",
    privateKey: expected.private_key,
    gatewayUrl: gw.url,
    feeder: true,
    extra,
  });
  cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
  return { gw, expected, setup };
}
