import { runtimeSettings } from "../config/runtime-settings.js";
import type { HashEngine } from "../verifier/hash/engine.js";
import { createEngine, type CreateEngineOptions } from "../verifier/hash/select.js";

/**
 * The Pedersen engine of a command that runs without a configuration: DACD_HASH_ENGINE (default
 * auto) and DACD_HASH_KERNEL, a fallback told on stderr.
 */
export function commandEngine(opts: CreateEngineOptions = {}): HashEngine {
  const settings = runtimeSettings();
  return createEngine(settings.hashEngine ?? "auto", {
    warn: (m) => process.stderr.write(`${m}\n`),
    kernel: settings.hashKernel,
    ...opts,
  });
}
