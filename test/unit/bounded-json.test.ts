import { describe, expect, it } from "vitest";
import {
  INLINE_PARSE_BYTES,
  JsonLimitError,
  JsonShapeScanner,
  parseJsonBounded,
} from "../../src/poller/bounded-json.js";

const limits = { maxDepth: 8, maxElements: 1000, maxStringBytes: 16 };

describe("JsonShapeScanner", () => {
  it("counts across chunk boundaries and ignores structure inside strings", () => {
    const s = new JsonShapeScanner({ ...limits, maxStringBytes: 64 });
    expect(s.push(Buffer.from('{"a":"[[[[[[[[[[[[\\'))).toBeUndefined();
    expect(s.push(Buffer.from('"]]]",'))).toBeUndefined();
    expect(s.push(Buffer.from('"b":[1,2,3]}'))).toBeUndefined();
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
