import { rm } from "node:fs/promises";
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  parseAbi,
  type Abi,
  type Address,
  type Hex,
  type PublicClient,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { pedersen } from "@scure/starknet";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import type { Daemon } from "../../src/app.js";
import { startDevnet, type Devnet } from "../../src/devnet/main.js";
import { expectMemberRootsNaive } from "../helpers/naive-chain.js";
import {
  DEVNET_EXCHANGE,
  PERPETUAL_ESCAPE_VERIFIER,
  SPOT_ESCAPE_VERIFIER,
} from "../../src/devnet/exchange/artifact.js";
import { makeOnchainProof } from "../../src/escape/onchain/from-proof.js";
import type { PerpetualEscape } from "../../src/escape/onchain/perpetual.js";
import type { SpotEscape } from "../../src/escape/onchain/spot.js";
import { DEV_ACCOUNT_KEY } from "../../src/devnet/exchange/eth-node.js";
import { ethAddressFromPrivateKey } from "../../src/signer/eth-signer.js";
import { dacdAsync } from "../helpers/dacd-cli.js";
import { memberSetup, startQuietDaemon, waitFor } from "../helpers/daemon.js";
import { submitToDevnet } from "../helpers/devnet-submit.js";

/**
 * A user walks out of a frozen exchange on the devnet's chain, as on mainnet and with viem: the
 * proof is `dacd proof … --format starkex`'s; the user registers, makes a forced request, waits out
 * the grace period (the node's clock moved on), freezes the exchange themself, has the escape
 * verifier check the path on-chain (Pedersen in the EVM), escapes and withdraws; their token
 * balance grows by exactly what the proof says. A second escape, a tampered proof and a proof at
 * a batch before the freeze revert with StarkEx's reasons. Each step's gas is printed.
 */
const MEMBER_KEY = "0x1111111111111111111111111111111111111111111111111111111111111111";
/** The second account of Hardhat's public test mnemonic (the node funds it): the user. */
const USER_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const GRACE_S = 3600;
/** The perpetual traffic's positions. */
const TRADERS = ["100", "101", "102", "103", "104", "105"];
/** Above any verifyEscape's gas here (a spot path of height 31, a perpetual one of 64 and its assets). */
const VERIFY_GAS = 60_000_000n;
const ERC20_ABI = parseAbi(["function balanceOf(address) view returns (uint256)"]);

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const gasTable: { variant: string; step: string; gas: bigint }[] = [];
afterAll(() => {
  console.log("gas of each exit step on the devnet's chain:");
  console.table(gasTable.map((r) => ({ variant: r.variant, step: r.step, gas: Number(r.gas) })));
});

interface Journey {
  readonly devnet: Devnet;
  readonly daemon: Daemon;
  readonly configPath: string;
  readonly reader: PublicClient;
  readonly send: (
    step: string,
    to: Address,
    abi: Abi,
    functionName: string,
    args: readonly unknown[],
    /** Another sender than the user. */
    senderKey?: Hex,
  ) => Promise<bigint>;
  readonly reverts: (
    to: Address,
    abi: Abi,
    functionName: string,
    args: readonly unknown[],
  ) => Promise<string>;
  readonly exchange: Address;
  readonly verifier: Address;
  readonly token: Address;
  readonly user: Address;
}

async function start(variant: "G" | "P", traffic?: number): Promise<Journey> {
  const devnet = await startDevnet({
    variant,
    committee: [ethAddressFromPrivateKey(new Uint8Array(Buffer.from(MEMBER_KEY.slice(2), "hex")))],
    quorum: 1,
    batchIntervalMs: 200,
    batchSize: 20,
    traffic,
    seed: 11,
    baseChain: true,
    freezeGracePeriodS: GRACE_S,
  });
  cleanups.push(() => devnet.close());
  const base = devnet.baseChain!;
  const setup = await memberSetup({
    profile: variant === "P" ? "perpetual" : "spot",
    privateKey: MEMBER_KEY,
    gatewayUrl: devnet.urls.availability,
    extra: [
      `base_chain_rpc_url: "${base.rpcUrl}"`,
      `starkex_contract_address: "${base.exchange.address}"`,
      "base_chain_confirmations: 0",
      "base_chain_poll_interval_s: 0.05",
    ].join("\n"),
  });
  cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
  const daemon = await startQuietDaemon({
    ...loadConfig(setup.configPath, {}),
    feederGatewayUrl: devnet.urls.feeder,
  });
  cleanups.push(() => daemon.stop());

  const transport = http(base.rpcUrl, { timeout: 60_000 });
  const chain = defineChain({
    id: 31337,
    name: "devnet",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [base.rpcUrl] } },
  });
  const account = privateKeyToAccount(USER_KEY);
  const reader = createPublicClient({ chain, transport, pollingInterval: 50 });
  const wallet = createWalletClient({ account, chain, transport });
  const label = variant === "P" ? "perpetual" : "spot";
  return {
    devnet,
    daemon,
    configPath: setup.configPath,
    reader,
    exchange: base.exchange.address,
    verifier: base.exchange.verifier!,
    token: base.exchange.token!,
    user: account.address,
    send: async (step, to, abi, functionName, args, senderKey) => {
      // verifyEscape goes with a gas limit: estimating it runs the Pedersen path many times over.
      const hash = await wallet.writeContract({
        address: to,
        abi,
        functionName,
        args,
        account: senderKey ? privateKeyToAccount(senderKey) : account,
        chain,
        gas: functionName === "verifyEscape" ? VERIFY_GAS : undefined,
      } as never);
      const receipt = await reader.waitForTransactionReceipt({ hash });
      expect(receipt.status, step).toBe("success");
      gasTable.push({ variant: label, step, gas: receipt.gasUsed });
      return receipt.gasUsed;
    },
    // The revert reason as a wallet would show it before sending (eth_call of the transaction).
    reverts: async (to, abi, functionName, args) => {
      try {
        await reader.simulateContract({ address: to, abi, functionName, args, account } as never);
      } catch (err) {
        return (err as Error).message;
      }
      throw new Error(`${functionName} did not revert`);
    },
  };
}

/** The grace period passes on the node's clock. */
async function timeTravel(j: Journey, seconds: number): Promise<void> {
  await j.reader.request({ method: "evm_increaseTime" as never, params: [seconds] as never });
  await j.reader.request({ method: "evm_mine" as never, params: [] as never });
}

async function proofJson(j: Journey, args: string[]): Promise<unknown> {
  const r = await dacdAsync(["proof", "--config", j.configPath, ...args, "--format", "starkex"]);
  expect(r.code, r.err).toBe(0);
  return JSON.parse(r.out);
}

/** A proof with row 2's sibling changed by one (still below the STARK prime). */
function tampered(words: readonly string[]): bigint[] {
  return words.map((w, i) => (i === 4 ? BigInt(w) ^ (1n << 8n) : BigInt(w)));
}

const EXCHANGE = DEVNET_EXCHANGE.abi as Abi;
const SIG = `0x${"00".repeat(96)}` as Hex;

describe("the devnet's chain carries an exit out", () => {
  it("spot: the on-chain Pedersen hash is StarkWare's", async () => {
    const j = await start("G");
    const pairs: [bigint, bigint][] = [
      [0n, 0n],
      [1n, 2n],
      [(1n << 251n) + 17n * (1n << 192n), (1n << 248n) + 12345n],
      [
        0x3d937c035c878245caf64531a5756109c53068da139362728feb561405371cbn,
        0x208a0a10250e382e1e4bbe2880906c2791bf6275695e02fbbc6aeff9cd8b31an,
      ],
    ];
    for (const [a, b] of pairs) {
      const onchain = await j.reader.readContract({
        address: j.verifier,
        abi: SPOT_ESCAPE_VERIFIER.abi,
        functionName: "pedersenHash",
        args: [a, b],
      });
      expect(onchain).toBe(BigInt(pedersen(a, b)));
    }
  }, 120_000);

  it("spot: a vault's owner walks out with the devnet's ERC-20 token", async () => {
    const j = await start("G");
    // Above 2^160: a key that is not itself an address has no owner until it is registered.
    const starkKey = 0x5a11cen << 200n;
    const vault = 5n;
    const asset = 0xa000n;
    let txId = 0;
    /** Deposits `amount` and waits until the vault holds `total` on-chain; the batch it is in. */
    const deposit = async (amount: string, total: string): Promise<number> => {
      await submitToDevnet(
        j.devnet.urls.gateway,
        {
          type: "DepositRequest",
          amount,
          core_key: `0x${starkKey.toString(16)}`,
          token_id: `0x${asset.toString(16)}`,
          vault_id: Number(vault),
        },
        { txId: txId++ },
      );
      let settled = -1;
      await waitFor(
        async () => {
          const onchain = j.daemon.chainWatch?.state?.last?.batch_id ?? -1;
          if (onchain < 0 || (await j.daemon.store.getBatch(onchain)) === undefined) return false;
          const e = (await makeOnchainProof(
            j.daemon.store,
            j.daemon.engine,
            "vault",
            "5",
            onchain,
          )) as SpotEscape;
          settled = onchain;
          return e.quantized_amount === total;
        },
        60_000,
        `the deposit of ${amount} on-chain`,
      );
      return settled;
    };
    // The same key's ETH vault, in the first batch.
    const ethVault = 6n;
    const eth = 0xa001n;
    await submitToDevnet(
      j.devnet.urls.gateway,
      {
        type: "DepositRequest",
        amount: "250",
        core_key: `0x${starkKey.toString(16)}`,
        token_id: `0x${eth.toString(16)}`,
        vault_id: Number(ethVault),
      },
      { txId: txId++ },
    );
    const early = await deposit("1200", "1200");
    await deposit("3400", "4600");

    // Registration, the forced request, and a freeze refused until the grace period has passed.
    expect(await j.reverts(j.exchange, EXCHANGE, "fullWithdrawalRequest", [starkKey, vault])).toMatch(
      /USER_UNREGISTERED/,
    );
    await j.send("registerEthAddress", j.exchange, EXCHANGE, "registerEthAddress", [j.user, starkKey, SIG]);
    await j.send("fullWithdrawalRequest", j.exchange, EXCHANGE, "fullWithdrawalRequest", [starkKey, vault]);
    const requested = await j.reader.readContract({
      address: j.exchange,
      abi: EXCHANGE,
      functionName: "getFullWithdrawalRequest",
      args: [starkKey, vault],
    });
    expect(requested).toBeGreaterThan(0n);
    expect(
      await j.reader.readContract({
        address: j.exchange,
        abi: EXCHANGE,
        functionName: "FREEZE_GRACE_PERIOD",
      }),
    ).toBe(BigInt(GRACE_S));
    expect(await j.reverts(j.exchange, EXCHANGE, "freezeRequest", [starkKey, vault])).toMatch(
      /FORCED_ACTION_PENDING/,
    );
    expect(await j.reverts(j.exchange, EXCHANGE, "freezeRequest", [starkKey, vault + 1n])).toMatch(
      /FORCED_ACTION_UNREQUESTED/,
    );
    await timeTravel(j, GRACE_S);
    // The user, not the exchange's owner, freezes it.
    await j.send("freezeRequest", j.exchange, EXCHANGE, "freezeRequest", [starkKey, vault]);
    await waitFor(
      async () => (await j.daemon.store.onchain.frozenBatchId()) !== undefined,
      20_000,
      "the freeze",
    );
    const frozen = (await j.daemon.store.onchain.frozenBatchId())!;
    // The root the exchange froze with is the devnet's, which is dacd's: the member's record of
    // it against a naive replay of the devnet's chain.
    await expectMemberRootsNaive(j.devnet.chain, j.daemon.store, [frozen]);

    const proof = (await proofJson(j, ["vault", "5"])) as SpotEscape;
    expect(proof.batch_id).toBe(frozen);
    expect(proof.quantized_amount).toBe("4600");
    const words = proof.escape_proof.map((w) => BigInt(w));

    // A tampered path reverts in the verifier, as on mainnet.
    expect(
      await j.reverts(j.verifier, SPOT_ESCAPE_VERIFIER.abi, "verifyEscape", [tampered(proof.escape_proof)]),
    ).toMatch(/Bad Merkle path/);
    // A proof at the batch before the freeze verifies, but the exchange's frozen root is not its root.
    const old = (await proofJson(j, ["vault", "5", "--batch", String(early)])) as SpotEscape;
    expect(old.batch_id).toBe(early);
    expect(old.quantized_amount).toBe("1200");
    await j.send(
      "verifyEscape (batch before the freeze)",
      j.verifier,
      SPOT_ESCAPE_VERIFIER.abi,
      "verifyEscape",
      [old.escape_proof.map((w) => BigInt(w))],
    );
    expect(await j.reverts(j.exchange, EXCHANGE, "escape", [starkKey, vault, asset, 1200n])).toMatch(
      /ESCAPE_LACKS_PROOF/,
    );

    await j.send("verifyEscape", j.verifier, SPOT_ESCAPE_VERIFIER.abi, "verifyEscape", [words]);
    await j.send("escape", j.exchange, EXCHANGE, "escape", [starkKey, vault, asset, 4600n]);
    expect(await j.reverts(j.exchange, EXCHANGE, "escape", [starkKey, vault, asset, 4600n])).toMatch(
      /ESCAPE_ALREADY_USED/,
    );
    const quantum = (await j.reader.readContract({
      address: j.exchange,
      abi: EXCHANGE,
      functionName: "getQuantum",
      args: [asset],
    })) as bigint;
    expect(quantum).toBe(1000n);
    expect(
      await j.reader.readContract({
        address: j.exchange,
        abi: EXCHANGE,
        functionName: "getWithdrawalBalance",
        args: [starkKey, asset],
      }),
    ).toBe(4600n * quantum);
    const before = await j.reader.readContract({
      address: j.token,
      abi: ERC20_ABI,
      functionName: "balanceOf",
      args: [j.user],
    });
    await j.send("withdraw", j.exchange, EXCHANGE, "withdraw", [starkKey, asset]);
    const after = await j.reader.readContract({
      address: j.token,
      abi: ERC20_ABI,
      functionName: "balanceOf",
      args: [j.user],
    });
    expect(after - before).toBe(quantum * 4600n);

    // The ETH vault: withdrawn by another account (anyone may send it), so that the user's ETH
    // balance grows by exactly quantum × quantized amount, no gas taken from it.
    const ethProof = (await proofJson(j, ["vault", String(ethVault)])) as SpotEscape;
    expect(ethProof.quantized_amount).toBe("250");
    await j.send("verifyEscape (ETH vault)", j.verifier, SPOT_ESCAPE_VERIFIER.abi, "verifyEscape", [
      ethProof.escape_proof.map((w) => BigInt(w)),
    ]);
    await j.send("escape (ETH vault)", j.exchange, EXCHANGE, "escape", [starkKey, ethVault, eth, 250n]);
    const ethQuantum = (await j.reader.readContract({
      address: j.exchange,
      abi: EXCHANGE,
      functionName: "getQuantum",
      args: [eth],
    })) as bigint;
    expect(ethQuantum).toBe(10n ** 10n);
    const ethBefore = await j.reader.getBalance({ address: j.user });
    await j.send(
      "withdraw (ETH, sent by another account)",
      j.exchange,
      EXCHANGE,
      "withdraw",
      [starkKey, eth],
      DEV_ACCOUNT_KEY,
    );
    expect((await j.reader.getBalance({ address: j.user })) - ethBefore).toBe(250n * ethQuantum);
  }, 240_000);

  it("perpetual: a position's owner walks out with the collateral token", async () => {
    // With traffic: its positions 100..105 trade synthetic assets, whose value the verifier computes.
    const j = await start("P", 40);
    const starkKey = 0x7777n;
    const position = 7n;
    await submitToDevnet(j.devnet.urls.gateway, {
      type: "DEPOSIT",
      amount: "777000",
      position_id: String(position),
      public_key: `0x${starkKey.toString(16)}`,
    });
    await waitFor(
      async () => {
        const onchain = j.daemon.chainWatch?.state?.last?.batch_id ?? -1;
        if (onchain < 0 || (await j.daemon.store.getBatch(onchain)) === undefined) return false;
        const e = (await makeOnchainProof(
          j.daemon.store,
          j.daemon.engine,
          "position",
          "7",
          onchain,
        )) as PerpetualEscape;
        if (e.collateral_balance !== "777000") return false;
        await new Promise((r) => setTimeout(r, 300));
        for (const id of TRADERS) {
          const t = await makeOnchainProof(j.daemon.store, j.daemon.engine, "position", id, onchain);
          if ((t as PerpetualEscape).n_assets > 0) return true;
        }
        return false;
      },
      120_000,
      "the deposit and a position with assets on-chain",
    );
    const amount = 777000n;
    await j.send("registerEthAddress", j.exchange, EXCHANGE, "registerEthAddress", [j.user, starkKey, SIG]);
    await j.send("forcedWithdrawalRequest", j.exchange, EXCHANGE, "forcedWithdrawalRequest", [
      starkKey,
      position,
      amount,
      false,
    ]);
    expect(await j.reverts(j.exchange, EXCHANGE, "freezeRequest", [starkKey, position, amount])).toMatch(
      /FORCED_ACTION_PENDING/,
    );
    await timeTravel(j, GRACE_S);
    await j.send("freezeRequest", j.exchange, EXCHANGE, "freezeRequest", [starkKey, position, amount]);
    await waitFor(
      async () => (await j.daemon.store.onchain.cursor())?.frozen?.shared_state !== undefined,
      20_000,
      "the frozen shared state",
    );
    await expectMemberRootsNaive(j.devnet.chain, j.daemon.store, [
      (await j.daemon.store.onchain.frozenBatchId())!,
    ]);

    const proof = (await proofJson(j, ["position", "7"])) as PerpetualEscape;
    expect(proof.withdrawal_amount).toBe("777000");
    const args = [
      proof.merkle_proof.map((w) => BigInt(w)),
      BigInt(proof.n_assets),
      proof.shared_state!.map((w) => BigInt(w)),
    ];
    expect(
      await j.reverts(j.verifier, PERPETUAL_ESCAPE_VERIFIER.abi, "verifyEscape", [
        tampered(proof.merkle_proof),
        args[1],
        args[2],
      ]),
    ).toMatch(/Bad Merkle path/);
    await j.send("verifyEscape", j.verifier, PERPETUAL_ESCAPE_VERIFIER.abi, "verifyEscape", args);
    // An amount other than the verified one has no fact.
    expect(await j.reverts(j.exchange, EXCHANGE, "escape", [starkKey, position, amount + 1n])).toMatch(
      /ESCAPE_LACKS_PROOF/,
    );
    await j.send("escape", j.exchange, EXCHANGE, "escape", [starkKey, position, amount]);
    expect(await j.reverts(j.exchange, EXCHANGE, "escape", [starkKey, position, amount])).toMatch(
      /ESCAPE_ALREADY_USED/,
    );
    const assetType = BigInt(proof.system_asset_type!);
    const before = await j.reader.readContract({
      address: j.token,
      abi: ERC20_ABI,
      functionName: "balanceOf",
      args: [j.user],
    });
    await j.send("withdraw", j.exchange, EXCHANGE, "withdraw", [starkKey, assetType]);
    const after = await j.reader.readContract({
      address: j.token,
      abi: ERC20_ABI,
      functionName: "balanceOf",
      args: [j.user],
    });
    const quantum = (await j.reader.readContract({
      address: j.exchange,
      abi: EXCHANGE,
      functionName: "getQuantum",
      args: [assetType],
    })) as bigint;
    expect(after - before).toBe(quantum * amount);

    // A position with assets: the verifier's amount (funding and prices from the shared state,
    // computed on-chain) is the proof's, as its fact shows; a non-positive one is refused.
    const withAssets: PerpetualEscape[] = [];
    for (const id of TRADERS) {
      const e = (await proofJson(j, ["position", id])) as PerpetualEscape;
      if (e.n_assets > 0) withAssets.push(e);
    }
    expect(withAssets.length).toBeGreaterThan(0);
    const traded = withAssets[0]!;
    const tradedArgs = [
      traded.merkle_proof.map((w) => BigInt(w)),
      BigInt(traded.n_assets),
      traded.shared_state!.map((w) => BigInt(w)),
    ];
    if (BigInt(traded.withdrawal_amount!) > 0n) {
      await j.send(
        `verifyEscape (${traded.n_assets} assets)`,
        j.verifier,
        PERPETUAL_ESCAPE_VERIFIER.abi,
        "verifyEscape",
        tradedArgs,
      );
      expect(
        await j.reader.readContract({
          address: j.verifier,
          abi: PERPETUAL_ESCAPE_VERIFIER.abi,
          functionName: "isValid",
          args: [traded.fact_hash! as Hex],
        }),
      ).toBe(true);
    } else {
      expect(await j.reverts(j.verifier, PERPETUAL_ESCAPE_VERIFIER.abi, "verifyEscape", tradedArgs)).toMatch(
        /Withdrawal amount must be positive/,
      );
    }
  }, 240_000);
});
