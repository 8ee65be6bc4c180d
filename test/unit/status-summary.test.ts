import { describe, expect, it } from "vitest";
import { statusSummary } from "../../src/cli/status-summary.js";

describe("dacd status on a terminal", () => {
  const base = { profile: "spot", cursor: { next_batch_id: 6 }, last_signed_batch: null, failing: null };

  it("has no on-chain line when the chain is not followed", () => {
    expect(statusSummary({ ...base, onchain: null }, false)).not.toMatch(/on-chain/);
  });

  it("shows the member's sequence number beside the contract's when they differ, saying why", () => {
    const onchain = {
      contract: "0x" + "11".repeat(20),
      batch_id: 4,
      sequence_number: 5,
      member_sequence_number: 4,
      block_number: 120,
      confirmed_block: 130,
      frozen: false,
      frozen_batch_id: null,
      frozen_block_number: null,
    };
    expect(statusSummary({ ...base, onchain }, false)).toMatch(
      /^on-chain +batch 4 \(sequence 5 on-chain, 4 in this member's claim: the contract counts its root updates, block 120\)$/m,
    );
    expect(statusSummary({ ...base, onchain: { ...onchain, member_sequence_number: 5 } }, false)).toMatch(
      /^on-chain +batch 4 \(sequence 5, block 120\)$/m,
    );
  });

  it("names the last batch on-chain, and the freeze", () => {
    const onchain = {
      batch_id: 4,
      sequence_number: 9,
      block_number: 120,
      frozen: false,
      frozen_batch_id: null,
    };
    expect(statusSummary({ ...base, onchain }, false)).toMatch(
      /^on-chain +batch 4 \(sequence 9, block 120\)$/m,
    );
    expect(
      statusSummary({ ...base, onchain: { ...onchain, frozen: true, frozen_batch_id: 4 } }, false),
    ).toMatch(/^on-chain +batch 4 \(sequence 9, block 120\); FROZEN at batch 4$/m);
    expect(statusSummary({ ...base, onchain: { ...onchain, batch_id: null } }, false)).toMatch(
      /^on-chain +no root update seen yet$/m,
    );
  });
});
