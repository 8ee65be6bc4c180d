import { createPublicClient, createWalletClient, defineChain, http, parseAbi, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, describe, expect, it } from "vitest";
import { DEVNET_EXCHANGE } from "../../src/devnet/exchange/artifact.js";
import type { PlanWithState } from "../../src/escape/exit/chain-state.js";
import type { ExitStep } from "../../src/escape/exit/plan.js";
import { makeOnchainProof } from "../../src/escape/onchain/from-proof.js";
import type { PerpetualEscape } from "../../src/escape/onchain/perpetual.js";
import type { SpotEscape } from "../../src/escape/onchain/spot.js";
import { dacdAsync } from "../helpers/dacd-cli.js";
import { waitFor } from "../helpers/daemon.js";
import { submitToDevnet } from "../helpers/devnet-submit.js";
import { exitDevnet } from "../helpers/exit-devnet.js";
import { expectMemberRootsNaive } from "../helpers/naive-chain.js";

/**
 * The exit journey from `dacd exit --json` alone, sent by viem on the devnet's chain: at each
 * point the plan's states say where the user stands (unregistered, request pending with the freeze
 * time read from FREEZE_GRACE_PERIOD, frozen, verified, escaped, withdrawn), each step's `data` is
 * sent as it is, and the user's token balance grows by exactly quantum × quantized amount.
 */
const USER_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const GRACE_S = 3600;
const VERIFY_GAS = 60_000_000n;
const SIG = `0x${"00".repeat(96)}` as Hex;

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A devnet with its chain, and a member following it with the exit's contracts configured. */
async function startJourney(variant: "G" | "P") {
  const { devnet, daemon, base, configPath } = await exitDevnet(variant, GRACE_S, [], cleanups);
  const setup = { configPath };

  const chain = defineChain({
    id: 31337,
    name: "devnet",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [base.rpcUrl] } },
  });
  const transport = http(base.rpcUrl, { timeout: 60_000 });
  const account = privateKeyToAccount(USER_KEY);
  const reader = createPublicClient({ chain, transport, pollingInterval: 50 });
  const wallet = createWalletClient({ account, chain, transport });

  const plan = async (object: string, id: string): Promise<PlanWithState> => {
    const r = await dacdAsync(["exit", "--config", setup.configPath, object, id, "--json"]);
    expect(r.code, r.err).toBe(0);
    return JSON.parse(r.out) as PlanWithState;
  };
  const step = (p: PlanWithState, name: string): ExitStep => p.steps.find((s) => s.step === name)!;
  const statuses = (p: PlanWithState): Record<string, string> =>
    Object.fromEntries(p.steps.map((s) => [s.step, s.state!.status]));
  const send = async (s: ExitStep, gas?: bigint): Promise<bigint> => {
    expect(s.to, s.step).not.toBeNull();
    expect(s.data, s.step).not.toBeNull();
    const hash = await wallet.sendTransaction({ to: s.to!, data: s.data!, gas, account, chain });
    const receipt = await reader.waitForTransactionReceipt({ hash });
    expect(receipt.status, s.step).toBe("success");
    console.log(`exit step ${s.step}: ${receipt.gasUsed} gas`);
    return receipt.gasUsed;
  };

  const timeTravel = async (seconds: number): Promise<void> => {
    await reader.request({ method: "evm_increaseTime" as never, params: [seconds] as never });
    await reader.request({ method: "evm_mine" as never, params: [] as never });
  };
  const balanceOf = async (): Promise<bigint> =>
    reader.readContract({
      address: base.exchange.token!,
      abi: parseAbi(["function balanceOf(address) view returns (uint256)"]),
      functionName: "balanceOf",
      args: [account.address],
    });
  const register = async (starkKey: bigint): Promise<void> => {
    // The stark signature is the user's own: sent here as the devnet takes it.
    const hash = await wallet.writeContract({
      address: base.exchange.address,
      abi: DEVNET_EXCHANGE.abi,
      functionName: "registerEthAddress",
      args: [account.address, starkKey, SIG],
      account,
      chain,
    } as never);
    await reader.waitForTransactionReceipt({ hash });
  };
  return { devnet, daemon, account, plan, step, statuses, send, timeTravel, balanceOf, register };
}

describe("dacd exit --json carries an exit out on the devnet's chain", () => {
  it("spot: each state read, each step's data sent, the balance paid", async () => {
    const {
      devnet,
      daemon,
      account,
      plan: planOf,
      step,
      statuses,
      send,
      timeTravel,
      balanceOf,
      register,
    } = await startJourney("G");
    const plan = (): Promise<PlanWithState> => planOf("vault", "5");
    const starkKey = 0x5a11cen << 200n;
    const asset = 0xa000n;
    await submitToDevnet(
      devnet.urls.gateway,
      {
        type: "DepositRequest",
        amount: "4600",
        core_key: `0x${starkKey.toString(16)}`,
        token_id: `0x${asset.toString(16)}`,
        vault_id: 5,
      },
      { txId: 0 },
    );
    await waitFor(
      async () => {
        const onchain = daemon.chainWatch?.state?.last?.batch_id ?? -1;
        if (onchain < 0 || (await daemon.store.getBatch(onchain)) === undefined) return false;
        const e = (await makeOnchainProof(daemon.store, daemon.engine, "vault", "5", onchain)) as SpotEscape;
        return e.quantized_amount === "4600";
      },
      60_000,
      "the deposit on-chain",
    );

    // Unregistered: the register step is there, the request would revert USER_UNREGISTERED.
    let p = await plan();
    expect(p.chain).toMatchObject({ frozen: false, freeze_grace_period: String(GRACE_S) });
    expect(p.chain.eth_key).toMatch(/^0x0{40}$/);
    expect(p.chain.asset).toMatchObject({ kind: "erc20", quantum: "1000" });
    expect(p.chain.amount_base_units).toBe(String(4600n * 1000n));
    expect(statuses(p)).toMatchObject({ register: "ready", request: "blocked" });
    expect(step(p, "request").state!.revert).toBe("USER_UNREGISTERED");
    expect(step(p, "withdraw").data).not.toBeNull();
    await register(starkKey);

    p = await plan();
    expect(p.steps.map((s) => s.step)).toEqual(["request", "freeze", "verify_escape", "escape", "withdraw"]);
    expect(p.chain.eth_key?.toLowerCase()).toBe(account.address.toLowerCase());
    expect(statuses(p)).toMatchObject({ request: "ready", freeze: "waiting", verify_escape: "waiting" });
    await send(step(p, "request"));

    p = await plan();
    const requestTime = BigInt(p.chain.request_time!);
    expect(requestTime).toBeGreaterThan(0n);
    expect(p.chain.freeze_possible_at).toBe(String(requestTime + BigInt(GRACE_S)));
    expect(statuses(p)).toMatchObject({ request: "done", freeze: "waiting" });
    expect(step(p, "freeze").state!.revert).toBe("FORCED_ACTION_PENDING");

    await timeTravel(GRACE_S);
    p = await plan();
    expect(statuses(p)).toMatchObject({ freeze: "ready" });
    await send(step(p, "freeze"));
    await waitFor(
      async () => (await daemon.store.onchain.frozenBatchId()) !== undefined,
      20_000,
      "the freeze",
    );

    // The frozen root is the devnet's, which is dacd's: the member's record against a naive replay.
    await expectMemberRootsNaive(devnet.chain, daemon.store, [(await daemon.store.onchain.frozenBatchId())!]);
    p = await plan();
    expect(p).toMatchObject({
      at_frozen_batch: true,
      frozen_batch_id: await daemon.store.onchain.frozenBatchId(),
    });
    expect(statuses(p)).toMatchObject({ request: "done", freeze: "done", verify_escape: "ready" });
    await send(step(p, "verify_escape"), VERIFY_GAS);

    p = await plan();
    expect(statuses(p)).toMatchObject({ verify_escape: "done", escape: "ready" });
    await send(step(p, "escape"));

    p = await plan();
    expect(statuses(p)).toMatchObject({ escape: "done", withdraw: "ready" });
    expect(step(p, "escape").state!.revert).toBe("ESCAPE_ALREADY_USED");
    expect(p.chain.withdrawal_balance).toBe(String(4600n * 1000n));
    const before = await balanceOf();
    await send(step(p, "withdraw"));
    const after = await balanceOf();
    expect(after - before).toBe(4600n * 1000n);

    p = await plan();
    expect(statuses(p)).toMatchObject({ escape: "done", withdraw: "done" });
    expect(p.chain.withdrawal_balance).toBe("0");
  }, 300_000);

  it("perpetual: each state read, each step's data sent, the collateral paid", async () => {
    const {
      devnet,
      daemon,
      plan: planOf,
      step,
      statuses,
      send,
      timeTravel,
      balanceOf,
      register,
    } = await startJourney("P");
    const plan = (): Promise<PlanWithState> => planOf("position", "7");
    // Above 2^160: the devnet takes a smaller key as its own Ethereum address.
    const starkKey = 0x7777n << 200n;
    await submitToDevnet(devnet.urls.gateway, {
      type: "DEPOSIT",
      amount: "777000",
      position_id: "7",
      public_key: `0x${starkKey.toString(16)}`,
    });
    await waitFor(
      async () => {
        const onchain = daemon.chainWatch?.state?.last?.batch_id ?? -1;
        if (onchain < 0 || (await daemon.store.getBatch(onchain)) === undefined) return false;
        const e = (await makeOnchainProof(
          daemon.store,
          daemon.engine,
          "position",
          "7",
          onchain,
        )) as PerpetualEscape;
        return e.collateral_balance === "777000";
      },
      60_000,
      "the deposit on-chain",
    );

    // Before the freeze the shared state is not known: the request names the collateral.
    let p = await plan();
    expect(p.quantized_amount).toBe("777000");
    expect(statuses(p)).toMatchObject({ register: "ready", request: "blocked" });
    expect(step(p, "verify_escape").data).toBeNull();
    await register(starkKey);
    p = await plan();
    expect(statuses(p)).toMatchObject({ request: "ready", freeze: "waiting" });
    await send(step(p, "request"));
    p = await plan();
    expect(statuses(p)).toMatchObject({ request: "done", freeze: "waiting" });
    expect(step(p, "freeze").state!.revert).toBe("FORCED_ACTION_PENDING");
    await timeTravel(GRACE_S);
    p = await plan();
    expect(statuses(p)).toMatchObject({ freeze: "ready" });
    await send(step(p, "freeze"));
    await waitFor(
      async () => (await daemon.store.onchain.cursor())?.frozen?.shared_state !== undefined,
      20_000,
      "the frozen shared state",
    );

    await expectMemberRootsNaive(devnet.chain, daemon.store, [(await daemon.store.onchain.frozenBatchId())!]);
    // Frozen, the shared state read by the member: the verifier's amount and every step's data.
    p = await plan();
    expect(p).toMatchObject({ at_frozen_batch: true, quantized_amount: "777000" });
    expect(statuses(p)).toMatchObject({ request: "done", freeze: "done", verify_escape: "ready" });
    await send(step(p, "verify_escape"), VERIFY_GAS);
    p = await plan();
    expect(statuses(p)).toMatchObject({ verify_escape: "done", escape: "ready" });
    await send(step(p, "escape"));
    p = await plan();
    expect(statuses(p)).toMatchObject({ escape: "done", withdraw: "ready" });
    const quantum = BigInt(p.chain.asset!.quantum!);
    expect(p.chain.withdrawal_balance).toBe(String(777000n * quantum));
    const before = await balanceOf();
    await send(step(p, "withdraw"));
    expect((await balanceOf()) - before).toBe(777000n * quantum);
    p = await plan();
    expect(statuses(p)).toMatchObject({ withdraw: "done" });
  }, 300_000);
});
