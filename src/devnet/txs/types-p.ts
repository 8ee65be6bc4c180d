/**
 * Parsed variant P transactions. DEPOSIT is the interface's only documented type; the others are
 * devnet-specific (docs/devnet.md) so the devnet can produce realistic position and order updates.
 */

export interface PerpOrder {
  readonly id: bigint;
  readonly position: bigint;
  readonly key: bigint;
  readonly asset: bigint;
  readonly synthetic: bigint;
  readonly collateral: bigint;
  readonly fee: bigint;
  readonly buying: boolean;
  readonly expiration: number;
}

export type PTx =
  | { readonly type: "DEPOSIT"; readonly amount: bigint; readonly position: bigint; readonly key: bigint }
  | {
      readonly type: "WITHDRAWAL";
      readonly id: bigint;
      readonly amount: bigint;
      readonly position: bigint;
      readonly key: bigint;
      readonly expiration: number;
    }
  | {
      readonly type: "TRANSFER";
      readonly id: bigint;
      readonly amount: bigint;
      readonly sender: bigint;
      readonly senderKey: bigint;
      readonly receiver: bigint;
      readonly receiverKey: bigint;
      readonly expiration: number;
    }
  | {
      readonly type: "TRADE";
      readonly a: PerpOrder;
      readonly b: PerpOrder;
      readonly synthetic: bigint;
      readonly collateral: bigint;
      readonly aFee: bigint;
      readonly bFee: bigint;
    }
  | {
      readonly type: "FUNDING_TICK";
      readonly indices: ReadonlyMap<bigint, bigint>;
      readonly timestamp: number;
    }
  | { readonly type: "NO_OP"; readonly reason: string };

export const P_TX_TYPES = ["DEPOSIT", "WITHDRAWAL", "TRANSFER", "TRADE", "FUNDING_TICK", "NO_OP"] as const;
