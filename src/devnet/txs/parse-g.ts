/** Field-by-field parsing of variant G transactions (gateway-interface §2). Throws TxError. */
import { Fields, TxError } from "./fields.js";
import { orderId } from "./order-id.js";
import {
  G_TX_TYPES,
  type FeeExchange,
  type FeeUser,
  type GTx,
  type Leg,
  type LimitOrder,
  type MultiAssetOrder,
} from "./types-g.js";

export interface GParseContext {
  /** Height of the vault trees: vault ids are below 2^vaultHeight. */
  readonly vaultHeight: number;
  /** Height of the order tree: order ids are reduced to it. */
  readonly orderHeight: number;
}

const NONCE_LIMIT = 2 ** 31;
const EXPIRATION_LIMIT = 2 ** 32;

type TransferTx = Extract<GTx, { type: "TransferRequest" | "ConditionalTransferRequest" }>;

/** A vault id: below 2^vaultHeight. */
const vaultId = (f: Fields, key: string, ctx: GParseContext): number => f.int(key, 0, 2 ** ctx.vaultHeight);

export function parseGTx(raw: unknown, ctx: GParseContext, path = "tx", nested = false): GTx {
  const f: Fields = Fields.of(raw, path);
  const type = f.get("type");
  if (typeof type !== "string" || !(G_TX_TYPES as readonly string[]).includes(type)) {
    f.fail(
      "type",
      `unknown transaction type ${JSON.stringify(type)}; expected one of ${G_TX_TYPES.join(", ")}`,
    );
  }
  switch (type) {
    case "DepositRequest":
    case "MintRequest":
    case "WithdrawalRequest":
      f.only(["type", "amount", "core_key", "token_id", "vault_id"]);
      return {
        type,
        amount: f.amount("amount"),
        key: f.hex("core_key"),
        token: f.hex("token_id"),
        vault: vaultId(f, "vault_id", ctx),
      };
    case "FullWithdrawalRequest":
      f.only(["type", "core_key", "vault_id"]);
      return { type, key: f.hex("core_key"), vault: vaultId(f, "vault_id", ctx) };
    case "FalseFullWithdrawalRequest":
      f.only(["type", "requester_core_key", "vault_id"]);
      return { type, requester: f.hex("requester_core_key"), vault: vaultId(f, "vault_id", ctx) };
    case "TransferRequest":
    case "ConditionalTransferRequest":
      return parseTransfer(f, type, ctx);
    case "SettlementRequest":
      return parseSettlement(f, ctx);
    case "MultiAssetTradeRequest":
      return parseMultiAssetTrade(f, ctx);
    case "MultiTransactionRequest": {
      f.only(["type", "txs"]);
      if (nested) f.fail("type", "a MultiTransactionRequest cannot be nested in another");
      const txs = f.arr("txs", 1).map((t, i) => parseGTx(t, ctx, `${f.at("txs")}.${i}`, true));
      return { type, txs };
    }
  }
  throw new TxError(f.at("type"), "unreachable");
}

/** A transfer; a conditional one carries a fact, a plain one may carry fees. */
function parseTransfer(f: Fields, type: TransferTx["type"], ctx: GParseContext): TransferTx {
  const common = [
    "type",
    "amount",
    "expiration_timestamp",
    "nonce",
    "receiver_public_key",
    "receiver_vault_id",
    "sender_public_key",
    "sender_vault_id",
    "signature",
    "token",
  ];
  const conditional = type === "ConditionalTransferRequest";
  f.only(
    conditional
      ? [...common, "fact", "fact_registry_address"]
      : [...common, "fee_info_exchange", "fee_info_user"],
  );
  const amount = f.amount("amount");
  const expiration = f.int("expiration_timestamp", 0, EXPIRATION_LIMIT);
  const nonce = f.int("nonce", 0, NONCE_LIMIT);
  const receiverKey = f.hex("receiver_public_key");
  const receiverVault = vaultId(f, "receiver_vault_id", ctx);
  const senderKey = f.hex("sender_public_key");
  const senderVault = vaultId(f, "sender_vault_id", ctx);
  f.signature("signature");
  const token = f.hex("token");
  let fact = "";
  if (conditional) {
    fact = f.plainHex("fact");
    f.address("fact_registry_address");
  }
  const { feeUser, feeExchange } = conditional ? {} : parseTransferFees(f, ctx);
  const id = orderId(
    type,
    [
      senderKey,
      senderVault,
      receiverKey,
      receiverVault,
      token,
      amount,
      nonce,
      expiration,
      fact,
      feeUser?.feeLimit ?? "",
      feeUser?.token ?? "",
    ],
    ctx.orderHeight,
  );
  return {
    type,
    id,
    amount,
    token,
    expiration,
    senderKey,
    senderVault,
    receiverKey,
    receiverVault,
    feeUser,
    feeExchange,
  };
}

/** A plain transfer's fees: fee_info_user and fee_info_exchange together, or neither. */
function parseTransferFees(f: Fields, ctx: GParseContext): { feeUser?: FeeUser; feeExchange?: FeeExchange } {
  if (f.has("fee_info_user") !== f.has("fee_info_exchange")) {
    f.fail(
      f.has("fee_info_user") ? "fee_info_exchange" : "fee_info_user",
      "fee_info_user and fee_info_exchange go together",
    );
  }
  if (!f.has("fee_info_user")) return {};
  const feeUser = parseFeeUser(f.obj("fee_info_user"), ctx);
  const feeExchange = parseFeeExchange(f.obj("fee_info_exchange"), ctx);
  if (feeExchange.feeTaken > feeUser.feeLimit)
    f.fail("fee_info_exchange.fee_taken", "exceeds fee_info_user.fee_limit");
  return { feeUser, feeExchange };
}

/** Two limit orders settled against each other. */
function parseSettlement(f: Fields, ctx: GParseContext): Extract<GTx, { type: "SettlementRequest" }> {
  f.only(["type", "party_a_order", "party_b_order", "settlement_info"]);
  const a = parseLimitOrder(f.get("party_a_order"), f.at("party_a_order"), ctx);
  const b = parseLimitOrder(f.get("party_b_order"), f.at("party_b_order"), ctx);
  const info: Fields = f.obj("settlement_info").only(["party_a_sold", "party_b_sold", "party_b_fee_info"]);
  const aSold = info.amount("party_a_sold");
  const bSold = info.amount("party_b_sold");
  const bFee = info.has("party_b_fee_info") ? parseFeeExchange(info.obj("party_b_fee_info"), ctx) : undefined;
  if (bFee && !b.fee) info.fail("party_b_fee_info", "party_b_order carries no fee_info to pay the fee from");
  if (a.tokenSell !== b.tokenBuy)
    f.fail("party_b_order.token_buy", "does not match party_a_order.token_sell");
  if (a.tokenBuy !== b.tokenSell)
    f.fail("party_b_order.token_sell", "does not match party_a_order.token_buy");
  if (a.id === b.id) f.fail("party_b_order", "is the same order as party_a_order");
  return { type: "SettlementRequest", a, b, aSold, bSold, bFee };
}

/** Multi-asset orders fulfilled by the given and received legs. */
function parseMultiAssetTrade(
  f: Fields,
  ctx: GParseContext,
): Extract<GTx, { type: "MultiAssetTradeRequest" }> {
  f.only(["type", "fulfillment_info", "orders"]);
  const info: Fields = f.obj("fulfillment_info").only(["given", "received"]);
  const legs = (key: string): Leg[] =>
    info.arr(key, 1).map((l, i) => parseLeg(l, `${info.at(key)}.${i}`, ctx, true));
  const given = legs("given");
  const received = legs("received");
  const orders = f.arr("orders", 1).map((o, i) => parseMultiAssetOrder(o, `${f.at("orders")}.${i}`, ctx));
  return { type: "MultiAssetTradeRequest", orders, given, received };
}

function parseFeeUser(f: Fields, ctx: GParseContext): FeeUser {
  f.only(["fee_limit", "source_vault_id", "token_id"]);
  return {
    feeLimit: f.amount("fee_limit"),
    sourceVault: f.int("source_vault_id", 0, 2 ** ctx.vaultHeight),
    token: f.hex("token_id"),
  };
}

function parseFeeExchange(f: Fields, ctx: GParseContext): FeeExchange {
  f.only(["destination_core_key", "destination_vault_id", "fee_taken"]);
  return {
    destKey: f.hex("destination_core_key"),
    destVault: f.int("destination_vault_id", 0, 2 ** ctx.vaultHeight),
    feeTaken: f.amount("fee_taken"),
  };
}

function parseLimitOrder(raw: unknown, path: string, ctx: GParseContext): LimitOrder {
  const f: Fields = Fields.of(raw, path);
  const type = f.get("type");
  const common = [
    "type",
    "amount_buy",
    "amount_sell",
    "expiration_timestamp",
    "nonce",
    "token_buy",
    "token_sell",
    "vault_id_buy",
    "vault_id_sell",
  ];
  let owner = 0n;
  let fee: FeeUser | undefined;
  if (type === "OrderL2Request") {
    // fee_info is optional on an L2 order (needed only when the settlement charges party B a fee).
    f.only([...common, "public_key", "signature", "fee_info"]);
    owner = f.hex("public_key");
    f.signature("signature");
    if (f.has("fee_info")) fee = parseFeeUser(f.obj("fee_info"), ctx);
  } else if (type === "OrderL1Request") {
    f.only([...common, "base_chain_address", "fee_info"]);
    owner = f.address("base_chain_address");
    fee = parseFeeUser(f.obj("fee_info"), ctx);
  } else {
    f.fail("type", `expected "OrderL2Request" or "OrderL1Request", got ${JSON.stringify(type)}`);
  }
  const amountBuy = f.amount("amount_buy");
  const amountSell = f.amount("amount_sell");
  if (amountSell === 0n) f.fail("amount_sell", "must be positive");
  const expiration = f.int("expiration_timestamp", 0, EXPIRATION_LIMIT);
  const nonce = f.int("nonce", 0, NONCE_LIMIT);
  const tokenBuy = f.hex("token_buy");
  const tokenSell = f.hex("token_sell");
  const vaultBuy = f.int("vault_id_buy", 0, 2 ** ctx.vaultHeight);
  const vaultSell = f.int("vault_id_sell", 0, 2 ** ctx.vaultHeight);
  if (tokenBuy === tokenSell) f.fail("token_buy", "equals token_sell");
  const id = orderId(
    String(type),
    [
      owner,
      amountBuy,
      amountSell,
      tokenBuy,
      tokenSell,
      vaultBuy,
      vaultSell,
      expiration,
      nonce,
      fee?.feeLimit ?? "",
      fee?.token ?? "",
    ],
    ctx.orderHeight,
  );
  return { id, owner, amountBuy, amountSell, tokenBuy, tokenSell, vaultBuy, vaultSell, expiration, fee };
}

function parseLeg(raw: unknown, path: string, ctx: GParseContext, withKey: boolean): Leg {
  const f: Fields = Fields.of(raw, path);
  f.only(withKey ? ["amount", "asset_id", "public_key", "vault_id"] : ["amount", "asset_id", "vault_id"]);
  const amount = f.amount("amount");
  if (amount === 0n) f.fail("amount", "must be positive");
  return {
    amount,
    asset: f.hex("asset_id"),
    vault: f.int("vault_id", 0, 2 ** ctx.vaultHeight),
    key: withKey ? f.hex("public_key") : undefined,
  };
}

function parseMultiAssetOrder(raw: unknown, path: string, ctx: GParseContext): MultiAssetOrder {
  const f: Fields = Fields.of(raw, path);
  f.only([
    "expiration_timestamp",
    "facts",
    "give",
    "nonce",
    "public_key",
    "receive",
    "signature",
    "system_id",
  ]);
  const expiration = f.int("expiration_timestamp", 0, EXPIRATION_LIMIT);
  // The element shape of `facts` is not specified: any JSON strings or objects are accepted as is.
  f.arr("facts").forEach((x, i) => {
    if (typeof x !== "string" && (typeof x !== "object" || x === null)) {
      throw new TxError(`${f.at("facts")}.${i}`, "expected a string or an object");
    }
  });
  const give = f.arr("give", 1).map((l, i) => parseLeg(l, `${f.at("give")}.${i}`, ctx, false));
  const nonce = f.int("nonce", 0, NONCE_LIMIT);
  const key = f.hex("public_key");
  const receive = f.arr("receive", 1).map((l, i) => parseLeg(l, `${f.at("receive")}.${i}`, ctx, true));
  f.signature("signature");
  const systemId = f.int("system_id", 0, Number.MAX_SAFE_INTEGER);
  const id = orderId(
    "MultiAssetOrder",
    [
      key,
      expiration,
      nonce,
      systemId,
      ...give.flatMap((l) => [l.vault, l.asset, l.amount]),
      ...receive.flatMap((l) => [l.key ?? 0n, l.vault, l.asset, l.amount]),
    ],
    ctx.orderHeight,
  );
  return { id, key, expiration, give, receive };
}
