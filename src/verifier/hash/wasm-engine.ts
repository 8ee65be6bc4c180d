import { createRequire } from "node:module";
import { checkPackedInputs, type HashEngine } from "./engine.js";

// pedersen-fast ships a CommonJS wasm-bindgen module; load it through require.
const require = createRequire(import.meta.url);
const wasm = require("pedersen-fast") as { pedersen_from_hex(x: string, y: string): string };

/**
 * WASM engine (pedersen-fast, Rust compiled to WebAssembly, by L2BEAT): far faster than the pure-JS
 * engine and needs no build step, so it is the fallback whenever the native addon is unavailable.
 * Its API takes hex strings, so each hash pays a conversion; inputs are range-checked here because
 * the library would otherwise reduce them silently.
 */
export class WasmEngine implements HashEngine {
  readonly name = "wasm";

  hashMany(xs: Uint8Array, ys: Uint8Array): Uint8Array {
    const n = checkPackedInputs(xs, ys);
    const out = Buffer.alloc(n * 32);
    const xb = Buffer.from(xs.buffer, xs.byteOffset, xs.byteLength);
    const yb = Buffer.from(ys.buffer, ys.byteOffset, ys.byteLength);
    for (let i = 0; i < n; i++) {
      const h = wasm.pedersen_from_hex(
        "0x" + xb.toString("hex", i * 32, i * 32 + 32),
        "0x" + yb.toString("hex", i * 32, i * 32 + 32),
      );
      const digits = h.startsWith("0x") ? h.slice(2) : h;
      out.write(digits.padStart(64, "0"), i * 32, "hex");
    }
    return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
  }
}
