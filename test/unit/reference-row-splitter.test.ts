import { describe, expect, it } from "vitest";
import {
  MAX_FIELD_BYTES,
  MAX_ROW_BYTES,
  RowParser,
  RowSplitter,
  VAULT_FIELDS,
} from "../../src/escape/reference-format.js";

/**
 * The row and field caps hold as bytes arrive, whatever the chunking: what is held of an
 * unfinished row stays under the cap, a legitimate row split anywhere (its CR and LF included)
 * passes, and the refusal names the file, the line and, for a field, the field.
 */

const splitter = (): RowSplitter =>
  new RowSplitter(new RowParser("vaults.csv", "vault_id", 31), VAULT_FIELDS);
const P1 = (2n ** 251n).toString(); // 76 digits, as long as a field element gets

/** Feeds `text` in chunks of `size` bytes; returns every row. */
function feed(s: RowSplitter, text: string, size: number): string[] {
  const bytes = Buffer.from(text, "latin1");
  const rows: string[] = [];
  for (let i = 0; i < bytes.length; i += size) {
    const got = s.push(bytes.subarray(i, i + size));
    s.line += got.length;
    rows.push(...got);
  }
  return [...rows, ...s.end()];
}

describe("RowSplitter", () => {
  it("passes the longest legitimate row in chunks of any size, CRLF split or not", () => {
    const row = `2147483647,${P1},${P1},9223372036854775807`;
    for (const size of [1, 2, 3, 7, 64, 65536]) {
      expect(feed(splitter(), `${row}\r\n1,2,3,4\r\n${row}`, size)).toEqual([row, "1,2,3,4", row]);
    }
  });

  it("passes a row of exactly the cap and refuses one byte more, before the line ends", () => {
    // Fields of the cap, then short ones: the row cap, not a field cap, is what is reached.
    const exact = ("1".repeat(MAX_FIELD_BYTES) + ",").repeat(8).slice(0, MAX_ROW_BYTES);
    const s = splitter();
    expect(feed(s, exact + "\r\n", 5)).toEqual([exact]);
    const over = splitter();
    expect(() => feed(over, "1,2,3,4\n" + exact + "1", 5)).toThrow(
      /^vaults\.csv line 2: longer than 1024 bytes, the most a row may hold$/,
    );
  });

  it("refuses a field over its cap while its row is still arriving", () => {
    const s = splitter();
    expect(() => s.push(Buffer.from("12," + "9".repeat(MAX_FIELD_BYTES + 1)))).toThrow(
      /^vaults\.csv line 1, field stark_key: longer than 128 bytes$/,
    );
    // A CR after the last field is the row's end, not a byte of the field.
    expect(feed(splitter(), "12," + "9".repeat(MAX_FIELD_BYTES) + "\r\n", 1)).toEqual([
      "12," + "9".repeat(MAX_FIELD_BYTES),
    ]);
  });

  it("holds no more than a row while an endless line arrives", () => {
    const s = splitter();
    const chunk = Buffer.alloc(1000, 0x31);
    expect(() => {
      for (let i = 0; i < 1e6; i++) s.push(chunk);
    }).toThrow(/^vaults\.csv line 1, field vault_id: longer than 128 bytes$/);
    expect(s.bytes).toBe(1000);
  });
});
