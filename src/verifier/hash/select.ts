import os from "node:os";
import { DacdError } from "../../errors.js";
import { HASH_ENGINES, type EngineName } from "../../model/engines.js";
import type { HashEngine } from "./engine.js";
import { JsEngine } from "./js-engine.js";
import { lastLoadError, nativeBuildScriptPath } from "../../native/addon.js";
import { loadNativeEngine } from "./native-engine.js";
import { PoolEngine } from "./pool-engine.js";
import { WasmEngine } from "./wasm-engine.js";

export type { EngineName };

export interface CreateEngineOptions {
  /** Told once when "auto" falls back from the native engine to WASM. */
  warn?: (message: string) => void;
  /** Native kernel to force (default: the best this CPU runs; DACD_HASH_KERNEL, passed by the caller). */
  kernel?: string;
  /**
   * Native worker threads: 1 (default) hashes on the calling thread; a larger number or "auto"
   * (os.availableParallelism()) spreads large calls over a worker pool.
   */
  threads?: number | "auto";
  /** Pairs below which pooled calls stay on the calling thread (PoolEngine's default otherwise). */
  poolThreshold?: number;
  /** Hashes below which chain climbs stay on the calling thread (PoolEngine's default otherwise). */
  poolClimbThreshold?: number;
}

function isEngineName(s: string): s is EngineName {
  return (HASH_ENGINES as readonly string[]).includes(s);
}

/**
 * Picks the Pedersen engine `requested` (native | wasm | js | auto; the callers pass
 * DACD_HASH_ENGINE or the hash_engine key); an unknown name is an error. Default "auto".
 * "auto" takes the native addon when it loads and otherwise WASM, telling `warn` once; an explicit
 * "native" that cannot load is an error.
 */
export function createEngine(
  requested: EngineName | (string & {}) = "auto",
  opts: CreateEngineOptions = {},
): HashEngine {
  const chosen = requested.trim();
  if (!isEngineName(chosen))
    throw new DacdError(
      "CONFIG",
      `hash engine (DACD_HASH_ENGINE, hash_engine) must be one of ${HASH_ENGINES.join(", ")} (got "${chosen}")`,
    );
  const name: EngineName = chosen;
  const kernel = opts.kernel?.trim() || undefined;
  switch (name) {
    case "js":
      return new JsEngine();
    case "wasm":
      return new WasmEngine();
    case "native":
    case "auto": {
      let native: HashEngine | null;
      try {
        native = makeNative(kernel, opts);
      } catch (err) {
        // A kernel this CPU or build lacks is a setting to fix, not a crash.
        if (kernel === undefined) throw err;
        throw new DacdError("CONFIG", (err as Error).message, { cause: err });
      }
      if (native) return native;
      const why = lastLoadError();
      const reason =
        why instanceof Error
          ? `does not load: ${why.message}`
          : `is not built (run \`node ${nativeBuildScriptPath()}\`)`;
      if (name === "native")
        throw new DacdError("CONFIG", `native Pedersen engine requested but the addon ${reason}`);
      opts.warn?.(`native Pedersen engine unavailable (addon ${reason}); falling back to the WASM engine`);
      return new WasmEngine();
    }
  }
}

function makeNative(kernel: string | undefined, opts: CreateEngineOptions): HashEngine | null {
  const threads = opts.threads === "auto" ? os.availableParallelism() : (opts.threads ?? 1);
  if (threads > 1)
    return PoolEngine.create({
      threads,
      kernel,
      threshold: opts.poolThreshold,
      climbThreshold: opts.poolClimbThreshold,
    });
  return loadNativeEngine(kernel);
}
