import type { WorkloadSize } from "./workloads.js";

/**
 * The bench's `--kernel` and `--scale-factor` options, checked before anything is loaded: the
 * kernels to run (in the order they alternate) and the sizes of the large state.
 */

/** The kernels `--kernel` names: one of `available`, or `all` for every one of them. */
export function parseKernelOption(value: string | undefined, available: readonly string[]): string[] {
  if (value === undefined) return [];
  const v = value.trim();
  if (v === "all") return [...available];
  if (!available.includes(v)) {
    throw new Error(
      `--kernel ${JSON.stringify(value)}: this CPU and build run ${available.join(", ")} (or all)`,
    );
  }
  return [v];
}

/** The default `--scale-factor`: W-scale's state is ten times W-spot's (10M vaults). */
export const DEFAULT_SCALE_FACTOR = 10;

/** `--scale-factor F`: a number above 1 (the large state must be larger than the base one). */
export function parseScaleFactor(value: string | undefined): number {
  if (value === undefined) return DEFAULT_SCALE_FACTOR;
  const f = Number(value);
  if (!Number.isFinite(f) || f <= 1) throw new Error(`--scale-factor must be a number above 1, got ${value}`);
  return f;
}

/**
 * How much each tree grows with the factor: the W-scale state is 10M vaults, 5M orders and
 * 1M rollup vaults, ten times W-spot's vaults and orders but five times its rollup vaults.
 */
const GROWTH: Partial<Record<string, number>> = { rollup_vault: 0.5 };

/** `base`'s initial state scaled by `factor` (rollup vaults by half of it), rounded; the same batches. */
export function scaledSize(base: WorkloadSize, factor: number): WorkloadSize {
  return {
    initial: Object.fromEntries(
      Object.entries(base.initial).map(([k, v]) => [k, Math.round(v * factor * (GROWTH[k] ?? 1))]),
    ),
    batch: { ...base.batch },
    sequentialIds: base.sequentialIds,
  };
}

/** `size` with both the state and the batches times `factor` (`--quick`: 0.1). */
export function shrunkSize(size: WorkloadSize, factor: number): WorkloadSize {
  const times = (r: WorkloadSize["initial"]) =>
    Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Math.round(v * factor)]));
  return { initial: times(size.initial), batch: times(size.batch), sequentialIds: size.sequentialIds };
}
