import { loadConfig, UnreadableConfigFile, type Config } from "../config/config.js";
import { runtimeSettings } from "../config/runtime-settings.js";
import { DacdError } from "../errors.js";

/** Where a command finds its configuration file when `--config` is not given. */
export const DEFAULT_CONFIG_PATH = "/etc/dacd/dacd.yaml";

/** `--config`, else the environment's DACD_CONFIG, else /etc/dacd/dacd.yaml. */
export function configPathOf(
  flag: string | undefined,
  env: Readonly<Record<string, string | undefined>> = runtimeSettings().environment,
): string {
  if (flag !== undefined && flag !== "") return flag;
  const fromEnv = env.DACD_CONFIG?.trim();
  return fromEnv ? fromEnv : DEFAULT_CONFIG_PATH;
}

/** The text commands' help gives for --config. */
export const CONFIG_HELP = `YAML configuration file (default: $DACD_CONFIG, else ${DEFAULT_CONFIG_PATH})`;

/** loadConfig of configPathOf(flag); a missing default file says how to name another. */
export function loadConfigFor(flag: string | undefined, env = runtimeSettings().environment): Config {
  const path = configPathOf(flag, env);
  try {
    return loadConfig(path, env);
  } catch (err) {
    if (flag === undefined && err instanceof UnreadableConfigFile)
      throw new DacdError("CONFIG", `${err.message} (name the file with --config FILE or DACD_CONFIG)`);
    throw err;
  }
}
