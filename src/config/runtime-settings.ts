import { threadpoolSize } from "../util/threadpool.js";

/**
 * The switches dacd reads from its environment outside the configuration file (the `DACD_*`
 * variables of env-check.ts's SWITCHES, and what systemd hands a service), read once, here, and
 * passed to the parts that use them: no other module reads the environment or changes it
 * (scripts/check-imports.mjs checks that). Their values are checked by env-check.ts before a
 * command runs.
 */
type Env = Readonly<Record<string, string | undefined>>;

export interface RuntimeSettings {
  /** DACD_HASH_ENGINE, for the commands that run without a configuration (else its hash_engine key). */
  readonly hashEngine: string | undefined;
  /** DACD_HASH_KERNEL: the native kernel to force (default: the best this CPU runs). */
  readonly hashKernel: string | undefined;
  /** DACD_TREE_WALK: native, js or auto (default). */
  readonly treeWalk: string;
  /** DACD_NODE_CACHE: `js` keeps the node cache in JavaScript even where the addon has one. */
  readonly nodeCache: "auto" | "js";
  /** DACD_SYSTEMD_NOTIFY: `exec` notifies systemd through systemd-notify rather than the addon. */
  readonly systemdNotify: "auto" | "exec";
  /** DACD_LEVEL_BINDING (or classic-level's PREBUILDS_ONLY): `stock` keeps classic-level's binding. */
  readonly levelBinding: "auto" | "stock";
  /** DACD_NATIVE_ADDON: the addon file to load instead of the one built or prebuilt. */
  readonly nativeAddon: string | undefined;
  /** DACD_BZIP2: the bzip2 program the escape kit's archives are made with (default bzip2 on PATH). */
  readonly bzip2: string;
  /** DACD_CONFIG: the configuration file when --config names none. */
  readonly configPath: string | undefined;
  /** CREDENTIALS_DIRECTORY: where systemd hands over credentials (LoadCredential=). */
  readonly credentialsDirectory: string | undefined;
  /** UV_THREADPOOL_SIZE as libuv took it (the launcher, bin/dacd.js, sets it when unset). */
  readonly threadpoolSize: number;
  /** JOURNAL_STREAM: set by systemd when stdout is the journal. */
  readonly journalStream: string | undefined;
  /**
   * The environment as dacd started with it, for what follows systemd's protocol (NOTIFY_SOCKET,
   * WATCHDOG_USEC, PATH for systemd-notify) and the configuration's DACD_<KEY> overrides.
   */
  readonly environment: Env;
}

const trimmed = (v: string | undefined): string | undefined => v?.trim() || undefined;

/** The settings `env` gives. */
export function readRuntimeSettings(env: Env): RuntimeSettings {
  return {
    hashEngine: trimmed(env.DACD_HASH_ENGINE),
    hashKernel: trimmed(env.DACD_HASH_KERNEL),
    treeWalk: trimmed(env.DACD_TREE_WALK) ?? "auto",
    nodeCache: trimmed(env.DACD_NODE_CACHE) === "js" ? "js" : "auto",
    systemdNotify: trimmed(env.DACD_SYSTEMD_NOTIFY) === "exec" ? "exec" : "auto",
    levelBinding: env.DACD_LEVEL_BINDING === "stock" || env.PREBUILDS_ONLY ? "stock" : "auto",
    nativeAddon: env.DACD_NATIVE_ADDON || undefined,
    bzip2: env.DACD_BZIP2 || "bzip2",
    configPath: trimmed(env.DACD_CONFIG),
    credentialsDirectory: env.CREDENTIALS_DIRECTORY || undefined,
    journalStream: env.JOURNAL_STREAM || undefined,
    threadpoolSize: threadpoolSize(env),
    environment: Object.freeze({ ...env }),
  };
}

let settings: RuntimeSettings | undefined;

/** This process's settings, read from its environment once, when first asked for. */
export function runtimeSettings(): RuntimeSettings {
  settings ??= readRuntimeSettings(process.env);
  return settings;
}
