/** Field-by-field parsing of variant P transactions (DEPOSIT plus the devnet-specific types). */
import { B64, Fields, TxError, hexValue } from "./fields.js";
import { orderId } from "./order-id.js";
import { P_TX_TYPES, type PTx, type PerpOrder } from "./types-p.js";

export interface PParseContext {
  readonly positionHeight: number;
  readonly orderHeight: number;
}

export const ASSET_ID_LIMIT = 1n << 120n;
const NONCE_LIMIT = 2 ** 31;
const EXPIRATION_LIMIT = 2 ** 32;

export function parsePTx(raw: unknown, ctx: PParseContext, path = "tx"): PTx {
  const f: Fields = Fields.of(raw, path);
  const type = f.get("type");
  if (typeof type !== "string" || !(P_TX_TYPES as readonly string[]).includes(type)) {
    f.fail(
      "type",
      `unknown transaction type ${JSON.stringify(type)}; expected one of ${P_TX_TYPES.join(", ")}`,
    );
  }
  const position = (x: Fields, key: string): bigint => x.decimalId(key, 1n << BigInt(ctx.positionHeight));
  switch (type) {
    case "DEPOSIT":
      f.only(["type", "amount", "position_id", "public_key"]);
      return {
        type,
        amount: f.amount("amount"),
        position: position(f, "position_id"),
        key: f.hex("public_key"),
      };
    case "WITHDRAWAL": {
      f.only(["type", "amount", "position_id", "public_key", "nonce", "expiration_timestamp", "signature"]);
      const amount = f.amount("amount");
      const pos = position(f, "position_id");
      const key = f.hex("public_key");
      const nonce = f.int("nonce", 0, NONCE_LIMIT);
      const expiration = f.int("expiration_timestamp", 0, EXPIRATION_LIMIT);
      f.signature("signature");
      const id = orderId(type, [pos, key, amount, nonce, expiration], ctx.orderHeight);
      return { type, id, amount, position: pos, key, expiration };
    }
    case "TRANSFER": {
      f.only([
        "type",
        "amount",
        "sender_position_id",
        "sender_public_key",
        "receiver_position_id",
        "receiver_public_key",
        "nonce",
        "expiration_timestamp",
        "signature",
      ]);
      const amount = f.amount("amount");
      const sender = position(f, "sender_position_id");
      const senderKey = f.hex("sender_public_key");
      const receiver = position(f, "receiver_position_id");
      const receiverKey = f.hex("receiver_public_key");
      const nonce = f.int("nonce", 0, NONCE_LIMIT);
      const expiration = f.int("expiration_timestamp", 0, EXPIRATION_LIMIT);
      f.signature("signature");
      if (sender === receiver) f.fail("receiver_position_id", "equals sender_position_id");
      const id = orderId(
        type,
        [sender, senderKey, receiver, receiverKey, amount, nonce, expiration],
        ctx.orderHeight,
      );
      return { type, id, amount, sender, senderKey, receiver, receiverKey, expiration };
    }
    case "TRADE": {
      f.only([
        "type",
        "party_a_order",
        "party_b_order",
        "actual_synthetic",
        "actual_collateral",
        "actual_a_fee",
        "actual_b_fee",
      ]);
      const a = parseOrder(f.obj("party_a_order"), ctx);
      const b = parseOrder(f.obj("party_b_order"), ctx);
      const synthetic = f.amount("actual_synthetic");
      const collateral = f.amount("actual_collateral");
      const aFee = f.amount("actual_a_fee");
      const bFee = f.amount("actual_b_fee");
      if (synthetic === 0n) f.fail("actual_synthetic", "must be positive");
      if (a.asset !== b.asset)
        f.fail("party_b_order.synthetic_asset_id", "differs from party_a_order.synthetic_asset_id");
      if (a.buying === b.buying)
        f.fail("party_b_order.is_buying_synthetic", "both orders are on the same side");
      if (a.position === b.position) f.fail("party_b_order.position_id", "equals party_a_order.position_id");
      return { type, a, b, synthetic, collateral, aFee, bFee };
    }
    case "FUNDING_TICK": {
      f.only(["type", "global_funding_indices", "timestamp"]);
      const g: Fields = f.obj("global_funding_indices");
      const indices = new Map<bigint, bigint>();
      for (const k of Object.keys(g.raw)) {
        const asset = hexValue(k, g.at(k), ASSET_ID_LIMIT);
        if (indices.has(asset)) g.fail(k, "asset id appears twice");
        indices.set(asset, g.signed(k));
      }
      return { type, indices, timestamp: f.int("timestamp", 0, Number.MAX_SAFE_INTEGER) };
    }
    case "NO_OP":
      f.only(["type", "reason"]);
      return { type, reason: f.str("reason") };
  }
  throw new TxError(f.at("type"), "unreachable");
}

function parseOrder(f: Fields, ctx: PParseContext): PerpOrder {
  f.only([
    "type",
    "position_id",
    "public_key",
    "synthetic_asset_id",
    "synthetic_amount",
    "collateral_amount",
    "fee_amount",
    "is_buying_synthetic",
    "nonce",
    "expiration_timestamp",
    "signature",
  ]);
  f.literal("type", "ORDER");
  const position = f.decimalId("position_id", 1n << BigInt(ctx.positionHeight));
  const key = f.hex("public_key");
  const asset = f.hex("synthetic_asset_id", ASSET_ID_LIMIT);
  const synthetic = f.amount("synthetic_amount", B64);
  const collateral = f.amount("collateral_amount", B64);
  const fee = f.amount("fee_amount", B64);
  const buying = f.bool("is_buying_synthetic");
  const nonce = f.int("nonce", 0, NONCE_LIMIT);
  const expiration = f.int("expiration_timestamp", 0, EXPIRATION_LIMIT);
  f.signature("signature");
  if (synthetic === 0n) f.fail("synthetic_amount", "must be positive");
  const id = orderId(
    "ORDER",
    [position, key, asset, synthetic, collateral, fee, buying ? 1 : 0, nonce, expiration],
    ctx.orderHeight,
  );
  return { id, position, key, asset, synthetic, collateral, fee, buying, expiration };
}
