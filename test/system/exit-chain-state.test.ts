import { encodeFunctionData, parseAbi } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withChainState } from "../../src/chain/exit-reader.js";
import { rpcClient } from "../../src/chain/rpc.js";
import { revertReason, type EthCall } from "../../src/escape/exit/chain-state.js";
import { exitPlan } from "../../src/escape/exit/plan.js";
import { spotEscape } from "../../src/escape/onchain/spot.js";
import { startEthNode, type EthNode } from "../../src/devnet/exchange/eth-node.js";
import { DevnetExchange } from "../../src/devnet/exchange/exchange.js";

/**
 * readExitState over a real local chain (Hardhat's node) with the devnet's exchange contract:
 * isFrozen, FREEZE_GRACE_PERIOD, getLastBatchId and getEthKey read, the frozen batch learnt from
 * the chain labels a proof at another batch, steps simulated with the contract's revert reasons,
 * and revert reasons taken out of viem's errors from the node. (The whole journey, with a real
 * proof: exit-journey.test.ts.)
 */

let node: EthNode;
beforeAll(async () => {
  node = await startEthNode();
});
afterAll(async () => {
  await node?.close();
});

const VERIFIER = "0x2222222222222222222222222222222222222222";
const A_USER = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"; // Hardhat's second account

function proofAt(batchId: number) {
  return spotEscape(
    // Above 2^160: the devnet takes a smaller key as its own Ethereum address.
    { starkKey: 0x3a7bn << 200n, assetId: 0x2893n, quantizedAmount: 1234n },
    0x55n,
    { index: 9n, nodes: [0x77n, 0x101n, 0x102n, 0x103n, 0x104n], siblings: [0x201n, 0x202n, 0x203n, 0x204n] },
    { profile: "spot", batch_id: batchId, sequence_number: batchId },
  );
}

describe("readExitState on a local chain", () => {
  it("reads the devnet exchange's state, before and after its freeze", async () => {
    const exchange = await DevnetExchange.deploy(node.url, "spot", 4);
    await exchange.commit(7, { vault: 11n });
    await exchange.commit(8, { vault: 12n });
    const plan = exitPlan(proofAt(9), {
      exchange: exchange.address.toLowerCase() as `0x${string}`,
      verifier: VERIFIER,
    });

    const before = await withChainState(plan, node.url, 5_000);
    expect(before.chain_id).toBe(31337);
    expect(before.chain).toMatchObject({ frozen: false, last_batch_id: 8 });
    expect(before.at_frozen_batch).toBeNull();
    // FREEZE_GRACE_PERIOD read (the devnet's default: 7 days), never assumed.
    expect(before.chain.freeze_grace_period).toBe("604800");
    expect(before.chain.eth_key).toMatch(/^0x0{40}$/);
    const states = Object.fromEntries(before.steps.map((s) => [s.step, s.state!.status]));
    expect(states).toMatchObject({
      register: "ready",
      request: "blocked",
      verify_escape: "waiting",
      escape: "waiting",
    });
    expect(before.steps.find((s) => s.step === "request")!.state!.revert).toBe("USER_UNREGISTERED");

    await exchange.freeze();
    const after = await withChainState(plan, node.url, 5_000);
    expect(after.chain).toMatchObject({ frozen: true, last_batch_id: 8 });
    // Learnt from the chain: frozen at 8, and this proof is at 9.
    expect(after).toMatchObject({ frozen_batch_id: 8, at_frozen_batch: false });
    expect(after.notes[0]).toMatch(/at batch 9, not at batch 8 where the exchange froze/);
    const frozenStates = Object.fromEntries(after.steps.map((s) => [s.step, s.state!.status]));
    expect(frozenStates).toMatchObject({ request: "done", freeze: "done" });
    // This made-up proof was never verified: escape waits for verify_escape, with the contract's reason.
    const escape = after.steps.find((s) => s.step === "escape")!;
    expect(escape.state).toMatchObject({ status: "waiting", revert: "ESCAPE_LACKS_PROOF" });
  });

  it("takes the revert reason out of viem's error from the node", async () => {
    const exchange = await DevnetExchange.deploy(node.url, "spot", 4);
    const client = rpcClient(node.url, 5_000);
    const call: EthCall = async ({ to, data, from }) =>
      (await client.call({ to, data, ...(from ? { account: from } : {}) })).data ?? "0x";
    const freeze = encodeFunctionData({ abi: parseAbi(["function freeze()"]), functionName: "freeze" });
    const reasonOf = async (from: `0x${string}`): Promise<string> => {
      try {
        await call({ to: exchange.address, data: freeze, from });
      } catch (err) {
        return revertReason(err);
      }
      return "no revert";
    };
    expect(await reasonOf(A_USER)).toBe("ONLY_OWNER");
    await exchange.freeze();
    const owner = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
    expect(await reasonOf(owner)).toBe("STATE_IS_FROZEN");
  });
});
