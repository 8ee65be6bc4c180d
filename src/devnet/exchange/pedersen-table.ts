/**
 * The points the devnet's on-chain Pedersen hash adds (contracts/StarkPedersen.sol): for each of
 * the hash's two inputs, the 248 points 2^i P1 (the low bits) and the 4 points 2^i P2 (the top 4
 * bits), P3 and P4 for the second input, as 32-byte big-endian affine x, y. The constant points
 * are StarkWare's (the same as native/pedersen/engine.c's); the doublings are @scure/starknet's.
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

/** 2^0..2^(n-1) times `p`, each checked on the curve. */
function doublings([x, y]: AffinePoint, n: number): AffinePoint[] {
  let p = Point.fromAffine({ x, y });
  p.assertValidity();
  const out: AffinePoint[] = [];
  for (let i = 0; i < n; i++) {
    const a = p.toAffine();
    out.push([a.x, a.y]);
    p = p.double();
  }
  return out;
}

function table(low: AffinePoint, high: AffinePoint): Uint8Array {
  const points = [...doublings(low, 248), ...doublings(high, 4)];
  const out = new Uint8Array(points.length * 64);
  points.forEach(([x, y], i) => {
    out.set(bigintToBytes32(x), i * 64);
    out.set(bigintToBytes32(y), i * 64 + 32);
  });
  return out;
}

/** The tables of the first input (P1, P2) and the second (P3, P4): 252 points, 16,128 bytes each. */
export function pedersenTables(): { first: Uint8Array; second: Uint8Array } {
  return { first: table(P1, P2), second: table(P3, P4) };
}
