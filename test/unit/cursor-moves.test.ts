import { describe, expect, it } from "vitest";
import type { BatchRecord } from "../../src/storage/batch-record.js";
import { cursorAfter } from "../../src/storage/cursor.js";

/** Where each move of the cursor leads (storage/cursor.ts), from the cursors the member meets. */

function record(id: number): BatchRecord {
  return {
    batch_id: id,
    prev_batch_id: id - 1,
    sequence_number: id,
    roots: {},
    root_gens: {},
    heights: {},
    claim_hash: "0x" + "ab".repeat(32),
    signature: "0x00",
    member_key: "0x" + "11".repeat(20),
    verified_at: "2026-01-01T00:00:00.000Z",
  };
}

const at = new Date("2026-02-03T04:05:06.000Z");

describe("cursorAfter", () => {
  it("accepted: past the batch, the last accepted, skipped ids kept, the record marked", () => {
    const moved = cursorAfter(
      { next_batch_id: 4, last_accepted_batch_id: 2, skipped: [3] },
      {
        kind: "accepted",
        record: record(4),
        at,
      },
    );
    expect(moved.cursor).toEqual({ next_batch_id: 5, last_accepted_batch_id: 4, skipped: [3] });
    expect(moved.record).toEqual({ ...record(4), accepted_at: at.toISOString() });
    // From an empty store, and never backwards.
    expect(cursorAfter(undefined, { kind: "accepted", record: record(0), at }).cursor).toEqual({
      next_batch_id: 1,
      last_accepted_batch_id: 0,
    });
    expect(
      cursorAfter(
        { next_batch_id: 9, last_accepted_batch_id: 8 },
        { kind: "accepted", record: record(4), at },
      ).cursor,
    ).toEqual({ next_batch_id: 9, last_accepted_batch_id: 8 });
  });

  it("shadowed: past the batch, the last accepted unchanged, the record marked", () => {
    const moved = cursorAfter(
      { next_batch_id: 6, last_accepted_batch_id: 5 },
      {
        kind: "shadowed",
        record: record(6),
        at,
      },
    );
    expect(moved.cursor).toEqual({ next_batch_id: 7, last_accepted_batch_id: 5 });
    expect(moved.record).toEqual({ ...record(6), shadowed_at: at.toISOString() });
    expect(cursorAfter(undefined, { kind: "shadowed", record: record(0), at }).cursor).toEqual({
      next_batch_id: 1,
      last_accepted_batch_id: -1,
    });
  });

  it("skipped: past the batch unsigned, noted (the newest 100), no record written", () => {
    const moved = cursorAfter(
      { next_batch_id: 2, last_accepted_batch_id: 1 },
      { kind: "skipped", batchId: 2 },
    );
    expect(moved).toEqual({ cursor: { next_batch_id: 3, last_accepted_batch_id: 1, skipped: [2] } });
    const many = Array.from({ length: 100 }, (_, i) => i);
    expect(
      cursorAfter(
        { next_batch_id: 100, last_accepted_batch_id: -1, skipped: many },
        { kind: "skipped", batchId: 100 },
      ).cursor.skipped,
    ).toEqual([...many.slice(1), 100]);
  });

  it("rewound: back to the skipped batch, which and whatever follows it is no longer skipped", () => {
    const moved = cursorAfter(
      { next_batch_id: 9, last_accepted_batch_id: 1, skipped: [2, 5, 7] },
      { kind: "rewound", to: 5 },
    );
    expect(moved).toEqual({ cursor: { next_batch_id: 5, last_accepted_batch_id: 1, skipped: [2] } });
  });

  it("loaded: just past the loaded batch as accepted, whatever was before; the record as given", () => {
    const moved = cursorAfter(
      { next_batch_id: 40, last_accepted_batch_id: 39, skipped: [3] },
      {
        kind: "loaded",
        record: record(7),
      },
    );
    expect(moved).toEqual({ cursor: { next_batch_id: 8, last_accepted_batch_id: 7 }, record: record(7) });
  });
});
