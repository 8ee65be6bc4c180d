import { describe, expect, it } from "vitest";
import { fuzzDaemon } from "../../bench/fuzz-daemon.js";

describe("fuzzing the run loop with mutated get_batch_data bodies", () => {
  it("1,000 seeded mutants: only the expected claims are signed, every failure is a DacdError", async () => {
    const f = await fuzzDaemon({ bodies: 1000, seed: 34 });
    console.log(JSON.stringify(f));
    expect(f.bodies).toBe(1000);
    expect(f.wrongSignatures).toBe(0);
    expect(f.conflictingIds).toBe(0);
    expect(f.internalErrors).toBe(0);
    expect(f.signedBatches).toBe(f.batches);
    // The mutants were refused for many reasons, not one.
    expect(Object.values(f.outcomes).reduce((a, b) => a + b, 0)).toBeGreaterThan(500);
    // Every mutant was parsed: the member failed on it or signed it (a harmless change).
    expect(f.mutantsRefused + f.mutantsSigned).toBe(f.bodies);
    // Fetches ahead got mutants too (each mutant is served to every fetch of its batch).
    expect(f.mutantServes).toBeGreaterThan(f.bodies);
  }, 300_000);
});
