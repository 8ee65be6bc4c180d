/**
 * Optional systemd readiness and watchdog notifications.
 *
 * Node cannot send a datagram to a Unix socket without a native addon, so dacd does not speak the
 * sd_notify protocol itself. When systemd asks for notifications (NOTIFY_SOCKET is set, i.e. the
 * unit has Type=notify) and `systemd-notify` is installed, dacd runs `systemd-notify --ready` once
 * it is started and `systemd-notify WATCHDOG=1` every WATCHDOG_USEC/2 while it is healthy. The
 * messages come from a child process, so such a unit needs NotifyAccess=all. The unit shipped in
 * systemd/dacd.service uses Type=exec and the health endpoint instead (docs/operations.md says
 * why); this module does nothing there.
 */
import { spawn } from "node:child_process";
import { access, constants } from "node:fs/promises";
import { delimiter, join } from "node:path";
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
  const env = opts.env ?? process.env;
  const disabled: SystemdNotifier = {
    enabled: false,
    ready: async () => undefined,
    stopping: async () => undefined,
    close: () => undefined,
  };
  if (!env.NOTIFY_SOCKET) return disabled;
  const bin = await findSystemdNotify(env);
  if (!bin) {
    opts.log.warn("NOTIFY_SOCKET is set but systemd-notify is not installed; use Type=exec for dacd");
    return disabled;
  }
  const pid = String(process.pid);
  const send = (args: string[]): Promise<void> =>
    run(bin, [`--pid=${pid}`, ...args], env).catch((err: unknown) =>
      opts.log.warn({ error: (err as Error).message }, `systemd-notify ${args.join(" ")} failed`),
    );
  let timer: NodeJS.Timeout | undefined;
  const watchdogUsec = Number(env.WATCHDOG_USEC);
  const watchdogFor = env.WATCHDOG_PID ? env.WATCHDOG_PID === pid : true;
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
    ready: (status) => send(["--ready", ...(status ? [`--status=${status}`] : [])]),
    stopping: () => send(["STOPPING=1"]),
    close: () => clearInterval(timer),
  };
}
