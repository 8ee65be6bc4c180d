import { Point } from "@scure/starknet";
import { describe, expect, it } from "vitest";
import { pedersenTables } from "../../src/devnet/exchange/pedersen-table.js";
import { bytesToBigint } from "../../src/util/bytes.js";

/** StarkWare's P1..P4 in decimal, as @scure/starknet and StarkWare's documentation give them. */
const P = {
  p1: [
    996781205833008774514500082376783249102396023663454813447423147977397232763n,
    1668503676786377725805489344771023921079126552019160156920634619255970485781n,
  ],
  p2: [
    2251563274489750535117886426533222435294046428347329203627021249169616184184n,
    1798716007562728905295480679789526322175868328062420237419143593021674992973n,
  ],
  p3: [
    2138414695194151160943305727036575959195309218611738193261179310511854807447n,
    113410276730064486255102093846540133784865286929052426931474106396135072156n,
  ],
  p4: [
    2379962749567351885752724891227938183011949129833673362440656643086021394946n,
    776496453633298175483985398648758586525933812536653089401905292063708816422n,
  ],
} as const;
const point = ([x, y]: readonly [bigint, bigint]): InstanceType<typeof Point> => Point.fromAffine({ x, y });

/** Entry (window w, digit d) of an input's table, as x, y, from its contracts' bytes. */
function entry(parts: Uint8Array[], w: number, d: number): [bigint, bigint] {
  const index = w * 15 + (d - 1);
  const part = parts[Math.floor(index / (21 * 15))]!;
  const at = (index % (21 * 15)) * 64;
  return [bytesToBigint(part, at), bytesToBigint(part, at + 32)];
}

describe("the devnet's on-chain Pedersen tables", () => {
  const { first, second } = pedersenTables();

  it("are three contracts of 21 windows × 15 points per input, each below the code size limit", () => {
    for (const parts of [first, second]) {
      expect(parts.map((p) => p.length)).toEqual([20160, 20160, 20160]);
      for (const p of parts) expect(p.length + 1).toBeLessThanOrEqual(24576);
    }
  });

  it("hold d × 16^w × P1 (P3) for the low windows and d × P2 (P4) for the top one", () => {
    const cases: [Uint8Array[], readonly [bigint, bigint], readonly [bigint, bigint]][] = [
      [first, P.p1, P.p2],
      [second, P.p3, P.p4],
    ];
    for (const [parts, low, high] of cases) {
      for (const [w, d] of [
        [0, 1],
        [0, 15],
        [1, 1],
        [30, 7],
        [61, 15],
      ] as const) {
        const want = point(low)
          .multiply(BigInt(d) * 16n ** BigInt(w))
          .toAffine();
        expect(entry(parts, w, d)).toEqual([want.x, want.y]);
      }
      for (const d of [1, 9, 15]) {
        const want = point(high).multiply(BigInt(d)).toAffine();
        expect(entry(parts, 62, d)).toEqual([want.x, want.y]);
      }
      // Every entry lies on the curve.
      const [x, y] = entry(parts, 45, 11);
      expect(() => Point.fromAffine({ x, y }).assertValidity()).not.toThrow();
    }
  });
});
