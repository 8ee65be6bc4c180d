import { pedersen } from "@scure/starknet";
import { bigintToBytes32, bytesToBigint } from "../../util/bytes.js";
import { checkPackedInputs, type HashEngine } from "./engine.js";

/** Pure-JS engine on @scure/starknet: far too slow to follow an operator, but the audited reference. */
export class JsEngine implements HashEngine {
  readonly name = "js";

  hashMany(xs: Uint8Array, ys: Uint8Array): Uint8Array {
    const n = checkPackedInputs(xs, ys);
    const out = new Uint8Array(n * 32);
    for (let i = 0; i < n; i++) {
      const h = pedersen(bytesToBigint(xs, i * 32), bytesToBigint(ys, i * 32));
      out.set(bigintToBytes32(BigInt(h)), i * 32);
    }
    return out;
  }
}
