// The width of the native Pedersen engine's table windows (PED_W, native/pedersen/core.h), chosen by
// scripts/build-native.mjs for the CPU that builds the addon (npm ci builds on the machine that runs
// dacd). Any width gives the same hashes; only speed and memory differ.
//
// Wider windows mean fewer point additions per hash but larger tables (14 bits: 36 MiB, 16 bits:
// 120 MiB), so the best width depends on how a kernel's arithmetic compares with its table loads.
// Measured with native/pedersen/bench_main.c, builds alternated: on a Zen 3 without AVX-512, 16 bits
// beat 14 by ~6% (adx); on a Zen 5 with AVX-512 IFMA, 14 bits beat 16 for every kernel (IFMA
// 0.69-0.82 against 0.71-0.90 us/hash, adx 3.0 against 3.5-4.7), and in the W-perp bench 1.76
// against 1.91 s per batch, bulk load 31.9 against 35.7 s, peak RSS ~80 MiB lower.

const MIN_WINDOW_BITS = 12;
const MAX_WINDOW_BITS = 16;

/**
 * `override` (DACD_PEDERSEN_WINDOW_BITS) when it is an integer in range; otherwise 14 where
 * `cpuinfo` (the text of /proc/cpuinfo, "" elsewhere) lists avx512ifma, else 16. `warn` hears of an
 * override that is ignored.
 */
export function chooseWindowBits(override, cpuinfo, warn = () => {}) {
  if (override !== undefined && override.trim() !== "") {
    const bits = Number(override);
    if (Number.isInteger(bits) && bits >= MIN_WINDOW_BITS && bits <= MAX_WINDOW_BITS) return bits;
    warn(
      `DACD_PEDERSEN_WINDOW_BITS=${override} ignored (an integer from ${MIN_WINDOW_BITS} to ${MAX_WINDOW_BITS})`,
    );
  }
  return /^flags\s*:.*\bavx512ifma\b/m.test(cpuinfo) ? 14 : 16;
}
