import { describe, expect, it } from "vitest";
import {
  INLINE_PARSE_BYTES,
  JsonLimitError,
  JsonShapeScanner,
  parseJsonBounded,
} from "../../src/poller/gateway/bounded-json.js";

const limits = { maxDepth: 8, maxElements: 1000, maxStringBytes: 16 };

describe("JsonShapeScanner", () => {
  it("counts across chunk boundaries and ignores structure inside strings", () => {
    const s = new JsonShapeScanner({ ...limits, maxStringBytes: 64 });
    expect(s.push(Buffer.from('{"a":"[[[[[[[[[[[[\\'))).toBeUndefined();
    expect(s.push(Buffer.from('"]]]",'))).toBeUndefined();
    expect(s.push(Buffer.from('"b":[1,2,3]}'))).toBeUndefined();
  });
  it("agrees with a byte-by-byte scan on strings with escapes, whatever the chunks", () => {
    // Strings are skipped to their next quote or backslash; a plain scan of every byte is the
    // reference: the same refusals (or none) for texts near the string limit, split anywhere.
    let seed = 7;
    const random = (n: number): number => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) % n;
    const pieces = ['"', "\\", '\\"', "x", "[", "]", "{", "}", ",", ":", "1", " "];
    for (let round = 0; round < 400; round++) {
      const text = Array.from({ length: 20 + random(60) }, () => pieces[random(pieces.length)]).join("");
      const bytes = Buffer.from(text);
      const expected = scanByteByByte(limits, bytes);
      const scanner = new JsonShapeScanner(limits);
      let refused: string | undefined;
      for (let at = 0; at < bytes.length && refused === undefined;) {
        const end = Math.min(bytes.length, at + 1 + random(12));
        refused = scanner.push(bytes.subarray(at, end));
        at = end;
      }
      expect(refused, text).toBe(expected);
    }
  });
  it("refuses depth, element count, string length and long runs, each by name", () => {
    expect(new JsonShapeScanner(limits).push(Buffer.from("[".repeat(9)))).toMatch(/deeper than 8/);
    expect(new JsonShapeScanner(limits).push(Buffer.from("[" + "[],".repeat(600)))).toMatch(
      /more than 1000 elements/,
    );
    expect(new JsonShapeScanner(limits).push(Buffer.from('["' + "x".repeat(17) + '"]'))).toMatch(
      /string is longer/,
    );
    expect(new JsonShapeScanner(limits).push(Buffer.from("[" + "9".repeat(17)))).toMatch(
      /between two tokens/,
    );
  });
});

describe("parseJsonBounded", () => {
  const big = {
    update: {
      vaults: Object.fromEntries(
        Array.from({ length: 40_000 }, (_, i) => [String(i), { balance: String(i * 7) }]),
      ),
    },
  };
  const bigBytes = (): Uint8Array => new Uint8Array(Buffer.from(JSON.stringify(big)));

  it("parses a large body in the worker to the same value as JSON.parse", async () => {
    const bytes = bigBytes();
    expect(bytes.length).toBeGreaterThan(INLINE_PARSE_BYTES);
    expect(await parseJsonBounded(bytes)).toEqual(big);
  });
  it("refuses a large body beyond the limits in the worker, and a small one inline", async () => {
    await expect(
      parseJsonBounded(bigBytes(), { limits: { ...limits, maxElements: 10_000, maxDepth: 64 } }),
    ).rejects.toThrow(JsonLimitError);
    await expect(parseJsonBounded(Buffer.from("[[[[[[[[[[]]]]]]]]]]"), { limits })).rejects.toThrow(/deeper/);
    await expect(parseJsonBounded(Buffer.from("[1,"))).rejects.toThrow(SyntaxError);
  });
  it("stops the worker when aborted", async () => {
    const ac = new AbortController();
    const p = parseJsonBounded(bigBytes(), { signal: ac.signal });
    ac.abort(new Error("shutting down"));
    await expect(p).rejects.toThrow("shutting down");
  });
});

/** The scan as the limits define it, one byte at a time: the reference for JsonShapeScanner. */
function scanByteByByte(l: typeof limits, bytes: Uint8Array): string | undefined {
  let [depth, elements, stringBytes, runBytes, inString, escaped] = [0, 0, 0, 0, false, false];
  for (const c of bytes) {
    if (inString) {
      if (escaped) escaped = false;
      else if (c === 0x5c) escaped = true;
      else if (c === 0x22) {
        inString = false;
        continue;
      }
      if (++stringBytes > l.maxStringBytes) return `a string is longer than ${l.maxStringBytes} bytes`;
      continue;
    }
    if (c === 0x22) [inString, stringBytes, elements] = [true, 0, elements + 1];
    else if (c === 0x5b || c === 0x7b) {
      elements++;
      if (++depth > l.maxDepth) return `nested deeper than ${l.maxDepth} levels`;
    } else if (c === 0x5d || c === 0x7d) depth--;
    else if (c === 0x2c) elements++;
    else if (c !== 0x3a) {
      if (++runBytes > l.maxStringBytes) return `more than ${l.maxStringBytes} bytes between two tokens`;
      continue;
    }
    runBytes = 0;
    if (elements > l.maxElements) return `more than ${l.maxElements} elements`;
  }
  return undefined;
}
