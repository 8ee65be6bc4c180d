/**
 * The end of `dacd demo --chain`: one user walks out of the devnet's exchange as a user of a frozen
 * StarkEx exchange would, every step a transaction on the local chain: a deposit of their own
 * (so the traffic does not move it), registration, a forced withdrawal request the operator never
 * serves, the grace period passing (the node's clock moved on), their own freezeRequest, the
 * escape verifier checking the member's proof on-chain, the escape, the withdrawal; their token
 * balance is printed before and after.
 */
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  parseAbi,
  type Abi,
  type Address,
  type Hex,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { Daemon } from "../app.js";
import {
  DEVNET_EXCHANGE,
  DEVNET_TOKEN,
  PERPETUAL_ESCAPE_VERIFIER,
  SPOT_ESCAPE_VERIFIER,
} from "../devnet/exchange/artifact.js";
import { DEV_USER_KEY } from "../devnet/exchange/eth-node.js";
import type { Devnet } from "../devnet/main.js";
import { makeOnchainProof } from "../escape/onchain/from-proof.js";
import type { PerpetualEscape } from "../escape/onchain/perpetual.js";
import type { SpotEscape } from "../escape/onchain/spot.js";

/** The demo user's stark key (above 2^160, so only its registration gives it an owner) and vault. */
const STARK_KEY = 0xdac0den << 200n;
/** A vault (position) id the traffic never uses. */
const VAULT_ID = 7777n;
/** The devnet's ERC-20 spot asset (src/devnet/exchange/assets.ts) and the amount deposited. */
const SPOT_ASSET = 0xa000n;
const SPOT_AMOUNT = 5000n;
const PERPETUAL_AMOUNT = 5_000_000n;
/** Above a verifyEscape's gas (the devnet's Pedersen in EVM code; estimating it is slow). */
const VERIFY_GAS = 60_000_000n;
/** The batch the member follows on-chain before the user's exit begins. */
const BATCHES_BEFORE_EXIT = 3;
const NO_SIGNATURE = `0x${"00".repeat(96)}` as Hex;

const ERC20_ABI = parseAbi(["function balanceOf(address) view returns (uint256)"]);
const EXCHANGE = DEVNET_EXCHANGE.abi as Abi;

/** Walks the demo user out; writes each step and the balances. Throws on a step that fails. */
export async function walkOneUserOut(
  devnet: Devnet,
  daemon: Daemon,
  write: (line: string) => void,
  /** Aborted when the demo stops: the walk ends at its next wait. */
  signal: AbortSignal,
): Promise<void> {
  const base = devnet.baseChain!;
  const perpetual = devnet.variant === "P";
  const tree = perpetual ? "position" : "vault";
  const token = base.exchange.token!;
  const exchange = base.exchange.address;
  const transport = http(base.rpcUrl, { timeout: 120_000 });
  const chain = defineChain({
    id: await createPublicClient({ transport }).getChainId(),
    name: "devnet",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [base.rpcUrl] } },
  });
  const account = privateKeyToAccount(DEV_USER_KEY);
  const reader = createPublicClient({ chain, transport, pollingInterval: 100 });
  const wallet = createWalletClient({ account, chain, transport });
  const read = async (
    address: Address,
    abi: Abi,
    functionName: string,
    args: unknown[] = [],
  ): Promise<unknown> => reader.readContract({ address, abi, functionName, args } as never);
  const send = async (label: string, address: Address, abi: Abi, functionName: string, args: unknown[]) => {
    const hash = await wallet.writeContract({
      address,
      abi,
      functionName,
      args,
      account,
      chain,
      gas: functionName === "verifyEscape" ? VERIFY_GAS : undefined,
    } as never);
    const receipt = await reader.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`${functionName} reverted (transaction ${hash})`);
    write(`  ${label.padEnd(26)} ${receipt.gasUsed.toLocaleString("en-US").padStart(11)} gas`);
  };

  const amount = perpetual ? PERPETUAL_AMOUNT : SPOT_AMOUNT;
  const key = `0x${STARK_KEY.toString(16)}`;
  // The exchange runs for a few batches before the user leaves it.
  await waitUntil(
    async () => (daemon.chainWatch?.state?.last?.batch_id ?? -1) >= BATCHES_BEFORE_EXIT,
    `batch ${BATCHES_BEFORE_EXIT} on-chain`,
    signal,
  );
  write(`walking one user out of the exchange: ${account.address}, stark key ${key}, ${tree} ${VAULT_ID}`);
  await deposit(devnet, perpetual, key, amount);
  await waitUntil(
    async () => {
      const onchain = daemon.chainWatch?.state?.last?.batch_id;
      if (onchain === undefined || (await daemon.store.getBatch(onchain)) === undefined) return false;
      const e = await makeOnchainProof(daemon.store, daemon.engine, tree, String(VAULT_ID), onchain);
      return perpetual
        ? (e as PerpetualEscape).collateral_balance === String(amount)
        : (e as SpotEscape).quantized_amount === String(amount);
    },
    `the deposit of ${tree} ${VAULT_ID} on-chain`,
    signal,
  );
  const before = (await read(token, ERC20_ABI, "balanceOf", [account.address])) as bigint;

  if ((await read(exchange, EXCHANGE, "getEthKey", [STARK_KEY])) !== account.address)
    await send("registerEthAddress", exchange, EXCHANGE, "registerEthAddress", [
      account.address,
      STARK_KEY,
      NO_SIGNATURE,
    ]);
  const frozenAlready = (await read(exchange, EXCHANGE, "isFrozen")) as boolean;
  if (!frozenAlready) {
    const target = perpetual ? [STARK_KEY, VAULT_ID, amount] : [STARK_KEY, VAULT_ID];
    if (perpetual)
      await send("forcedWithdrawalRequest", exchange, EXCHANGE, "forcedWithdrawalRequest", [
        ...target,
        false,
      ]);
    else await send("fullWithdrawalRequest", exchange, EXCHANGE, "fullWithdrawalRequest", target);
    const grace = (await read(exchange, EXCHANGE, "FREEZE_GRACE_PERIOD")) as bigint;
    await reader.request({ method: "evm_increaseTime" as never, params: [Number(grace)] as never });
    await reader.request({ method: "evm_mine" as never, params: [] as never });
    write(`  (the operator did not serve it; the node's clock moved on by FREEZE_GRACE_PERIOD, ${grace} s)`);
    await send("freezeRequest", exchange, EXCHANGE, "freezeRequest", target);
  } else write("  (the exchange is frozen already)");
  await waitUntil(
    async () => {
      const frozen = (await daemon.store.onchain.cursor())?.frozen;
      return frozen !== undefined && (!perpetual || frozen.shared_state !== undefined);
    },
    "the member to see the freeze",
    signal,
  );

  const proof = await makeOnchainProof(daemon.store, daemon.engine, tree, String(VAULT_ID));
  const verifier = base.exchange.verifier!;
  let assetType: bigint;
  let escaped: bigint;
  if (perpetual) {
    const p = proof as PerpetualEscape;
    escaped = BigInt(p.withdrawal_amount!);
    assetType = BigInt(p.system_asset_type!);
    await send("verifyEscape", verifier, PERPETUAL_ESCAPE_VERIFIER.abi as Abi, "verifyEscape", [
      p.merkle_proof.map(BigInt),
      BigInt(p.n_assets),
      p.shared_state!.map(BigInt),
    ]);
    await send("escape", exchange, EXCHANGE, "escape", [STARK_KEY, VAULT_ID, escaped]);
  } else {
    const s = proof as SpotEscape;
    escaped = BigInt(s.quantized_amount);
    assetType = SPOT_ASSET;
    await send("verifyEscape", verifier, SPOT_ESCAPE_VERIFIER.abi as Abi, "verifyEscape", [
      s.escape_proof.map(BigInt),
    ]);
    await send("escape", exchange, EXCHANGE, "escape", [STARK_KEY, VAULT_ID, SPOT_ASSET, escaped]);
  }
  await send("withdraw", exchange, EXCHANGE, "withdraw", [STARK_KEY, assetType]);
  const after = (await read(token, ERC20_ABI, "balanceOf", [account.address])) as bigint;
  const quantum = (await read(exchange, EXCHANGE, "getQuantum", [assetType])) as bigint;
  const symbol = (await read(token, DEVNET_TOKEN.abi as Abi, "symbol")) as string;
  write(
    `  ${symbol} balance of ${account.address}: ${before} before, ${after} after ` +
      `(${escaped} quantized × quantum ${quantum}, escaped at batch ${proof.batch_id})`,
  );
}

/** The user's own deposit, at the gateway's first free transaction id. */
async function deposit(devnet: Devnet, perpetual: boolean, key: string, amount: bigint): Promise<void> {
  const tx = perpetual
    ? { type: "DEPOSIT", amount: String(amount), position_id: String(VAULT_ID), public_key: key }
    : {
        type: "DepositRequest",
        amount: String(amount),
        core_key: key,
        token_id: `0x${SPOT_ASSET.toString(16)}`,
        vault_id: Number(VAULT_ID),
      };
  const path = perpetual ? "/add_transaction" : "/gateway/v2/add_transaction";
  let txId = devnet.status().first_unused_tx_id ?? 0;
  for (let attempt = 0; attempt < 50; attempt++, txId++) {
    const res = await fetch(devnet.urls.gateway + path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ tx_id: txId, tx }),
    });
    const body = await res.text();
    if (res.status === 200) return;
    // 409: the traffic took this id first.
    if (res.status !== 409) throw new Error(`the deposit was refused (${res.status}): ${body.trim()}`);
  }
  throw new Error("the deposit found no free transaction id");
}

async function waitUntil(
  cond: () => Promise<boolean>,
  what: string,
  signal: AbortSignal,
  timeoutMs = 120_000,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!signal.aborted && !(await cond())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  signal.throwIfAborted();
}
