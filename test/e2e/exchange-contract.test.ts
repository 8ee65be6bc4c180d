import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPublicClient, encodePacked, http, keccak256, parseAbi, parseEventLogs } from "viem";
import { EXCHANGE_ABI } from "../../src/chain/exchange-abi.js";
import { startEthNode, type EthNode } from "../../src/devnet/exchange/eth-node.js";
import { DevnetExchange, type Flavor } from "../../src/devnet/exchange/exchange.js";
import { sharedStateWords, type PerpetualSharedState } from "../../src/devnet/exchange/program-output.js";
import { sharedStateOfCall } from "../../src/chain/shared-state.js";

const SHARED = (positionRoot: bigint): PerpetualSharedState => ({
  positionRoot,
  positionHeight: 64,
  orderRoot: 0x1234n,
  orderHeight: 64,
  funding: new Map([[0xbeef0n, -5n]]),
  fundingTimestamp: 1_700_000_000n,
  prices: new Map([[0xbeef0n, 3n << 32n]]),
  systemTime: 1_700_000_100n,
});

/**
 * The devnet's exchange contract on a local node: each flavor emits its StarkEx root-update event,
 * which dacd's own ABI (src/chain/exchange-abi.ts) decodes, and the views name the committed state.
 */
let node: EthNode;
beforeAll(async () => {
  node = await startEthNode();
});
afterAll(async () => {
  await node?.close();
});

async function eventsOf(exchange: DevnetExchange) {
  const client = createPublicClient({ transport: http(node.url) });
  const logs = await client.getLogs({ address: exchange.address, fromBlock: 0n });
  return { client, events: parseEventLogs({ abi: EXCHANGE_ABI, logs }) };
}

describe("DevnetExchange", () => {
  it.each<[Flavor, string, number]>([
    ["spot", "LogRootUpdate", 5],
    ["spot-v4.0", "LogRootUpdate", 4],
    ["perpetual", "LogUpdateState", 2],
  ])("%s emits %s with %i fields, and the views follow", async (flavor, name, fields) => {
    const exchange = await DevnetExchange.deploy(node.url, flavor, 31);
    await exchange.commit(7, { vault: 11n, rollupVault: 12n, order: 13n });
    const { client, events } = await eventsOf(exchange);
    expect(events).toHaveLength(1);
    expect(events[0]!.eventName).toBe(name);
    const args = events[0]!.args as Record<string, bigint>;
    expect(Object.keys(args)).toHaveLength(fields);
    expect(args.batchId).toBe(7n);
    expect(args.sequenceNumber).toBe(1n);
    const read = (
      functionName:
        | "getLastBatchId"
        | "getValidiumVaultRoot"
        | "getValidiumTreeHeight"
        | "getRollupVaultRoot"
        | "getVaultRoot"
        | "getOrderRoot"
        | "getVaultTreeHeight",
    ) => client.readContract({ address: exchange.address, abi: EXCHANGE_ABI, functionName });
    expect(await read("getLastBatchId")).toBe(7n);
    // StarkEx's names from v4.5, and v4.0's for the same root and height.
    expect(await read("getValidiumVaultRoot")).toBe(11n);
    expect(await read("getValidiumTreeHeight")).toBe(31n);
    expect(await read("getRollupVaultRoot")).toBe(12n);
    expect(await read("getVaultRoot")).toBe(11n);
    expect(await read("getOrderRoot")).toBe(13n);
    expect(await read("getVaultTreeHeight")).toBe(31n);
  });

  it("perpetual: updateState(programOutput, applicationData) keeps the new shared state's hash and its roots", async () => {
    const exchange = await DevnetExchange.deploy(node.url, "perpetual", 64);
    const prev = sharedStateWords(SHARED(1n));
    const next = sharedStateWords(SHARED(0x77n));
    const { hash } = await exchange.commitPerpetual(3, 2, prev, next);
    const { client, events } = await eventsOf(exchange);
    expect(events.map((e) => [e.eventName, e.args])).toEqual([
      ["LogUpdateState", { sequenceNumber: 1n, batchId: 3n }],
    ]);
    const tx = await client.getTransaction({ hash });
    // The new state sits in the calldata where StarkEx's ProgramOutputOffsets put it.
    expect(sharedStateOfCall(tx.input, 3, "the update")).toEqual(next);
    expect(() => sharedStateOfCall(tx.input, 4, "the update")).toThrow(/names batch 3, not 4/);
    const stateHash = await client.readContract({
      address: exchange.address,
      abi: parseAbi(["function getSharedStateHash() view returns (bytes32)"]),
      functionName: "getSharedStateHash",
    });
    expect(stateHash).toBe(
      keccak256(
        encodePacked(
          next.map(() => "uint256"),
          next,
        ),
      ),
    );
    const read = (
      functionName: "getLastBatchId" | "getValidiumVaultRoot" | "getOrderRoot" | "getSystemAssetType",
    ) => client.readContract({ address: exchange.address, abi: EXCHANGE_ABI, functionName });
    expect(await read("getLastBatchId")).toBe(3n);
    expect(await read("getValidiumVaultRoot")).toBe(0x77n);
    expect(await read("getOrderRoot")).toBe(0x1234n);
    expect(await read("getSystemAssetType")).toBeGreaterThan(0n);
  });

  it("freezes once: LogFrozen, isFrozen(), and no root update afterwards", async () => {
    const exchange = await DevnetExchange.deploy(node.url, "spot", 31);
    await exchange.commit(0, { vault: 1n });
    expect(await exchange.isFrozen()).toBe(false);
    await exchange.freeze();
    expect(await exchange.isFrozen()).toBe(true);
    const { events } = await eventsOf(exchange);
    expect(events.map((e) => e.eventName)).toEqual(["LogRootUpdate", "LogFrozen"]);
    await expect(exchange.commit(1, { vault: 2n })).rejects.toThrow(/STATE_IS_FROZEN|revert/);
  });
});

describe("the compiled artifact", () => {
  it("is the contract's current source, compiled", async () => {
    const { execFile } = await import("node:child_process");
    const { promisify } = await import("node:util");
    const { stdout } = await promisify(execFile)(process.execPath, [
      "scripts/compile-contract.mjs",
      "--check",
    ]);
    expect(stdout).toMatch(/matches the contract/);
  });
});
