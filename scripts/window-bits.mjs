// The width of the native Pedersen engine's table windows (PED_W, native/pedersen/core.h), chosen by
// scripts/build-native.mjs for the CPU that builds the addon (npm ci builds on the machine that runs
// dacd). Any width gives the same hashes; only speed and memory differ.
//
// Wider windows mean fewer point additions per hash but larger tables (14 bits: 36 MiB, 16 bits:
// 120 MiB), so the best width depends on how a kernel's arithmetic compares with its table loads.
// Without AVX-512 IFMA the additions are the larger cost, and 16 bits win; with IFMA's fast
// arithmetic the table loads are, and 14 bits win for every kernel the CPU runs (and take less
// memory). native/pedersen/bench_main.c times a build; `npm run bench -- --kernel all` compares.

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
