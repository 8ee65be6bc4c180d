/**
 * Optional systemd readiness and watchdog notifications.
 *
 * When systemd asks for notifications (NOTIFY_SOCKET is set, i.e. the unit has Type=notify), dacd
 * sends `READY=1` once it is started and `WATCHDOG=1` every WATCHDOG_USEC/2 while it is healthy.
 * Node cannot send a datagram to a Unix socket, so the native addon sends it (native/sd_notify.c),
 * from dacd's own process. Without the addon (or with DACD_SYSTEMD_NOTIFY=exec) dacd runs
 * `systemd-notify` instead, which needs NotifyAccess=all, and forks the daemon for each message:
 * the batch after a fork pays a page fault for every page it writes (docs/performance.md). The
 * unit shipped in systemd/dacd.service uses Type=exec and the health endpoint instead
 * (docs/operations.md says why); this module does nothing there.
 */
import { spawn } from "node:child_process";
import { access, constants } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { runtimeSettings } from "../config/runtime-settings.js";
import { nativeJob } from "../native/addon.js";
import type { Logger } from "../logging.js";

export interface SystemdNotifier {
  /** Whether notifications are sent at all. */
  readonly enabled: boolean;
  ready(status?: string): Promise<void>;
  stopping(): Promise<void>;
  close(): void;
}

export interface NotifierOptions {
  log: Logger;
  env?: NodeJS.ProcessEnv;
  /** Checked before each watchdog ping; no ping while it is false (systemd then restarts dacd). */
  healthy?: () => Promise<boolean>;
}

/** The first executable `systemd-notify` on PATH. */
async function findSystemdNotify(env: NodeJS.ProcessEnv): Promise<string | undefined> {
  for (const dir of (env.PATH ?? "/usr/bin:/bin").split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, "systemd-notify");
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // next
    }
  }
  return undefined;
}

function run(bin: string, args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { env, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => (stderr = (stderr + c.toString("utf8")).slice(0, 500)));
    child.once("error", reject);
    child.once("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`${bin} exited with ${code}: ${stderr.trim()}`)),
    );
  });
}

export async function createSystemdNotifier(opts: NotifierOptions): Promise<SystemdNotifier> {
  const env = opts.env ?? runtimeSettings().environment;
  const disabled: SystemdNotifier = {
    enabled: false,
    ready: async () => undefined,
    stopping: async () => undefined,
    close: () => undefined,
  };
  if (!env.NOTIFY_SOCKET) return disabled;
  const send = await messageSender(env, opts.log);
  if (!send) return disabled;
  let timer: NodeJS.Timeout | undefined;
  const watchdogUsec = Number(env.WATCHDOG_USEC);
  const watchdogFor = env.WATCHDOG_PID ? env.WATCHDOG_PID === String(process.pid) : true;
  if (Number.isFinite(watchdogUsec) && watchdogUsec > 0 && watchdogFor) {
    const everyMs = Math.max(500, Math.floor(watchdogUsec / 2000));
    let pinging = false;
    timer = setInterval(() => {
      if (pinging) return;
      pinging = true;
      void (async () => {
        try {
          if (!opts.healthy || (await opts.healthy())) await send(["WATCHDOG=1"]);
          else opts.log.warn("not healthy: skipping the systemd watchdog ping");
        } finally {
          pinging = false;
        }
      })();
    }, everyMs);
    timer.unref();
  }
  return {
    enabled: true,
    ready: (status) => send(["READY=1", ...(status ? [`STATUS=${status}`] : [])]),
    stopping: () => send(["STOPPING=1"]),
    close: () => clearInterval(timer),
  };
}

/** Sends one notification (its `KEY=value` lines); failures are logged, never thrown. */
type Sender = (assignments: string[]) => Promise<void>;

/**
 * The addon's sender where it loads (unless DACD_SYSTEMD_NOTIFY=exec), else `systemd-notify`
 * where it is installed; undefined (with a warning) when there is neither.
 */
async function messageSender(env: NodeJS.ProcessEnv, log: Logger): Promise<Sender | undefined> {
  const socket = env.NOTIFY_SOCKET!;
  const failed = (assignments: string[], err: unknown): void =>
    log.warn({ error: (err as Error).message }, `sd_notify ${assignments.join(" ")} failed`);
  const addon = env.DACD_SYSTEMD_NOTIFY === "exec" ? null : nativeJob<NativeNotify>("sdNotify");
  if (addon) {
    const sdNotify = addon.sdNotify.bind(addon);
    return async (assignments) => {
      try {
        sdNotify(socket, assignments.join("\n"));
      } catch (err) {
        failed(assignments, err);
      }
    };
  }
  const bin = await findSystemdNotify(env);
  if (!bin) {
    log.warn(
      "NOTIFY_SOCKET is set but neither the native addon nor systemd-notify is available; use Type=exec for dacd",
    );
    return undefined;
  }
  const pid = `--pid=${process.pid}`;
  // systemd-notify's own flags for READY and STATUS; other assignments as they are.
  const args = (assignments: string[]): string[] =>
    assignments.map((a) =>
      a === "READY=1" ? "--ready" : a.startsWith("STATUS=") ? `--status=${a.slice(7)}` : a,
    );
  return (assignments) =>
    run(bin, [pid, ...args(assignments)], env).catch((err: unknown) => failed(assignments, err));
}

/** The addon's sd_notify (native/sd_notify.c; absent where the platform has none). */
interface NativeNotify {
  sdNotify(socket: string, message: string): void;
}
