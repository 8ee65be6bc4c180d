/** Parsed variant G transactions (gateway-interface §2); amounts and keys as bigint. */

export interface FeeUser {
  readonly feeLimit: bigint;
  readonly sourceVault: number;
  readonly token: bigint;
}

export interface FeeExchange {
  readonly destKey: bigint;
  readonly destVault: number;
  readonly feeTaken: bigint;
}

/** An OrderL2Request or OrderL1Request; `owner` is the public key or the base-chain address. */
export interface LimitOrder {
  readonly id: bigint;
  readonly owner: bigint;
  readonly amountBuy: bigint;
  readonly amountSell: bigint;
  readonly tokenBuy: bigint;
  readonly tokenSell: bigint;
  readonly vaultBuy: number;
  readonly vaultSell: number;
  readonly expiration: number;
  readonly fee?: FeeUser | undefined;
}

export interface Leg {
  readonly amount: bigint;
  readonly asset: bigint;
  readonly vault: number;
  readonly key?: bigint | undefined;
}

export interface MultiAssetOrder {
  readonly id: bigint;
  readonly key: bigint;
  readonly expiration: number;
  readonly give: readonly Leg[];
  readonly receive: readonly Leg[];
}

export type GTx =
  | {
      readonly type: "DepositRequest" | "MintRequest" | "WithdrawalRequest";
      readonly amount: bigint;
      readonly key: bigint;
      readonly token: bigint;
      readonly vault: number;
    }
  | { readonly type: "FullWithdrawalRequest"; readonly key: bigint; readonly vault: number }
  | { readonly type: "FalseFullWithdrawalRequest"; readonly requester: bigint; readonly vault: number }
  | {
      readonly type: "TransferRequest" | "ConditionalTransferRequest";
      readonly id: bigint;
      readonly amount: bigint;
      readonly token: bigint;
      readonly expiration: number;
      readonly senderKey: bigint;
      readonly senderVault: number;
      readonly receiverKey: bigint;
      readonly receiverVault: number;
      readonly feeUser?: FeeUser | undefined;
      readonly feeExchange?: FeeExchange | undefined;
    }
  | {
      readonly type: "SettlementRequest";
      readonly a: LimitOrder;
      readonly b: LimitOrder;
      readonly aSold: bigint;
      readonly bSold: bigint;
      readonly bFee?: FeeExchange | undefined;
    }
  | {
      readonly type: "MultiAssetTradeRequest";
      readonly orders: readonly MultiAssetOrder[];
      readonly given: readonly Leg[];
      readonly received: readonly Leg[];
    }
  | { readonly type: "MultiTransactionRequest"; readonly txs: readonly GTx[] };

export const G_TX_TYPES = [
  "SettlementRequest",
  "TransferRequest",
  "ConditionalTransferRequest",
  "DepositRequest",
  "MintRequest",
  "WithdrawalRequest",
  "FullWithdrawalRequest",
  "FalseFullWithdrawalRequest",
  "MultiAssetTradeRequest",
  "MultiTransactionRequest",
] as const;
