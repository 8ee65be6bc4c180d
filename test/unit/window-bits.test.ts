import { describe, expect, it } from "vitest";
import { chooseWindowBits } from "../../scripts/window-bits.mjs";

// Excerpts of /proc/cpuinfo: a Zen 5 with AVX-512 IFMA and a Zen 3 without AVX-512.
const ZEN5 =
  "processor\t: 0\nflags\t\t: fpu sse2 avx2 adx avx512f avx512ifma avx512vbmi bmi2\nbugs\t\t: sysret_ss_attrs\n";
const ZEN3 = "processor\t: 0\nflags\t\t: fpu sse2 avx2 adx bmi2\nbugs\t\t: sysret_ss_attrs\n";

describe("the native engine's window width chosen at build time", () => {
  it("is 14 bits where the CPU has AVX-512 IFMA and 16 elsewhere", () => {
    expect(chooseWindowBits(undefined, ZEN5)).toBe(14);
    expect(chooseWindowBits(undefined, ZEN3)).toBe(16);
    expect(chooseWindowBits(undefined, "")).toBe(16);
    // Only the flags line counts, and only the whole flag name.
    expect(chooseWindowBits(undefined, ZEN3 + "model name\t: avx512ifma lookalike\n")).toBe(16);
    expect(chooseWindowBits(undefined, ZEN3.replace("adx", "avx512ifmax"))).toBe(16);
  });

  it("takes DACD_PEDERSEN_WINDOW_BITS from 12 to 16, and ignores anything else with a warning", () => {
    expect(chooseWindowBits("12", ZEN5)).toBe(12);
    expect(chooseWindowBits("16", ZEN5)).toBe(16);
    expect(chooseWindowBits(" ", ZEN5)).toBe(14);
    for (const bad of ["11", "17", "14.5", "abc"]) {
      const warnings: string[] = [];
      expect(chooseWindowBits(bad, ZEN3, (m) => warnings.push(m))).toBe(16);
      expect(warnings).toEqual([`DACD_PEDERSEN_WINDOW_BITS=${bad} ignored (an integer from 12 to 16)`]);
    }
  });
});
