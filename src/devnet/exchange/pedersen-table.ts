/**
 * The points the devnet's on-chain Pedersen hash adds (contracts/StarkPedersen.sol): for each of
 * the hash's two inputs, for each 4-bit window w of its low 248 bits the 15 points d × 16^w × P1
 * (d = 1..15), then d × P2 for its top 4 bits (P3 and P4 for the second input), as 32-byte
 * big-endian affine x, y. The constant points are StarkWare's (the same as
 * native/pedersen/engine.c's); the point arithmetic is @scure/starknet's.
 */
import { Point } from "@scure/starknet";
import { bigintToBytes32 } from "../../util/bytes.js";

type AffinePoint = readonly [x: bigint, y: bigint];

/** P1..P4 (P0, the shift point, is a constant of the contract). */
const P1: AffinePoint = [
  0x0234287dcbaffe7f969c748655fca9e58fa8120b6d56eb0c1080d17957ebe47bn,
  0x03b056f100f96fb21e889527d41f4e39940135dd7a6c94cc6ed0268ee89e5615n,
];
const P2: AffinePoint = [
  0x04fa56f376c83db33f9dab2656558f3399099ec1de5e3018b7a6932dba8aa378n,
  0x03fa0984c931c9e38113e0c0e47e4401562761f92a7a23b45168f4e80ff5b54dn,
];
const P3: AffinePoint = [
  0x04ba4cc166be8dec764910f75b45f74b40c690c74709e90f3aa372f0bd2d6997n,
  0x0040301cf5c1751f4b971e46c4ede85fcac5c59a5ce5ae7c48151f27b24b219cn,
];
const P4: AffinePoint = [
  0x054302dcb0e6cc1c6e44cca8f61a63bb2ca65048d53fb325d36ff12c49a58202n,
  0x01b77b3e37d13504b348046268d8ae25ce98ad783c25561a879dcc77e99c2426n,
];

/** Windows of 4 bits: a value's low 248 bits are 62 windows, its top 4 bits a 63rd. */
const WINDOWS_LOW = 62;
const DIGITS = 15;
/** Windows per table contract: 21 × 15 points × 64 bytes = 20,160 bytes, below the 24,576-byte code limit. */
const WINDOWS_PER_CONTRACT = 21;

/** d × 16^w × p for d = 1..15 and w = 0..windows−1, checked on the curve, window by window. */
function windowed([x, y]: AffinePoint, windows: number): AffinePoint[] {
  let base = Point.fromAffine({ x, y });
  base.assertValidity();
  const out: AffinePoint[] = [];
  for (let w = 0; w < windows; w++) {
    let p = base;
    for (let d = 1; d <= DIGITS; d++) {
      const a = p.toAffine();
      out.push([a.x, a.y]);
      p = p.add(base);
    }
    base = p; // 16 × base
  }
  return out;
}

/** One input's table, split into the contracts that hold it. */
function table(low: AffinePoint, high: AffinePoint): Uint8Array[] {
  const points = [...windowed(low, WINDOWS_LOW), ...windowed(high, 1)];
  const chunk = WINDOWS_PER_CONTRACT * DIGITS;
  const parts: Uint8Array[] = [];
  for (let from = 0; from < points.length; from += chunk) {
    const slice = points.slice(from, from + chunk);
    const out = new Uint8Array(slice.length * 64);
    slice.forEach(([px, py], i) => {
      out.set(bigintToBytes32(px), i * 64);
      out.set(bigintToBytes32(py), i * 64 + 32);
    });
    parts.push(out);
  }
  return parts;
}

/**
 * The tables of the first input (P1, P2) and the second (P3, P4): 63 windows of 15 points each,
 * in three contracts of 21 windows.
 */
export function pedersenTables(): { first: Uint8Array[]; second: Uint8Array[] } {
  return { first: table(P1, P2), second: table(P3, P4) };
}
