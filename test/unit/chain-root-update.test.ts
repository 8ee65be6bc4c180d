import { describe, expect, it } from "vitest";
import {
  onchainBatch,
  rootHex,
  rootsMatch,
  rootsOf,
  type RootUpdateLog,
} from "../../src/chain/root-update.js";
import type { BatchRecord } from "../../src/storage/batch-record.js";

const log = (eventName: RootUpdateLog["eventName"], args: RootUpdateLog["args"]): RootUpdateLog => ({
  eventName,
  args: { sequenceNumber: 9n, batchId: 4n, ...args },
  blockNumber: 120n,
  transactionHash: "0xabc",
});
const stored = (roots: Record<string, string>) => ({ batch_id: 4, roots }) as unknown as BatchRecord;

describe("a root update read from the exchange", () => {
  it("names its roots by dacd's trees, for each event", () => {
    expect(
      rootsOf(log("LogRootUpdate", { validiumVaultRoot: 1n, rollupVaultRoot: 2n, orderRoot: 3n }), "vault"),
    ).toEqual({
      vault: rootHex(1n),
      rollup_vault: rootHex(2n),
      order: rootHex(3n),
    });
    expect(rootsOf(log("LogRootUpdate", { vaultRoot: 5n, orderRoot: 6n }), "vault")).toEqual({
      vault: rootHex(5n),
      order: rootHex(6n),
    });
    const perpetual = log("LogUpdateState", {});
    expect(rootsOf(perpetual, "position")).toBeUndefined();
    expect(rootsOf(perpetual, "position", { vault: 7n, order: 8n })).toEqual({
      position: rootHex(7n),
      order: rootHex(8n),
    });
    expect(rootHex(0xabcn)).toBe("0".repeat(61) + "abc");
  });

  it("matches when every tree both name agrees, and says nothing without a stored batch", () => {
    const onchain = { vault: rootHex(1n), order: rootHex(3n) };
    expect(
      rootsMatch(onchain, stored({ vault: rootHex(1n), order: rootHex(3n), rollup_vault: rootHex(9n) })),
    ).toBe(true);
    expect(rootsMatch(onchain, stored({ vault: rootHex(1n).toUpperCase(), order: rootHex(3n) }))).toBe(true);
    expect(rootsMatch(onchain, stored({ vault: rootHex(2n), order: rootHex(3n) }))).toBe(false);
    expect(rootsMatch(onchain, undefined)).toBeUndefined();
    expect(rootsMatch(undefined, stored({ vault: rootHex(1n) }))).toBeUndefined();
    expect(rootsMatch(onchain, stored({ position: rootHex(1n) }))).toBeUndefined();
  });

  it("is recorded with where it is, and without `matches` when nothing was compared", () => {
    const update = log("LogRootUpdate", { vaultRoot: 5n, orderRoot: 6n });
    const roots = rootsOf(update, "vault");
    expect(onchainBatch(update, roots, undefined)).toEqual({
      batch_id: 4,
      sequence_number: 9,
      block_number: 120,
      tx_hash: "0xabc",
      event: "LogRootUpdate",
      roots,
    });
    expect(onchainBatch(update, roots, stored({ vault: rootHex(5n), order: rootHex(7n) })).matches).toBe(
      false,
    );
  });
});
