import { readFileSync } from "node:fs";
import { join } from "node:path";

/** The vector chains copied from the operator's and the team's shared vectors (test/fixtures/vectors). */
export const FIXTURES = join(import.meta.dirname, "..", "fixtures", "vectors");
export const CHAINS = ["spot-golden", "spot-chain", "spot-v40-chain", "perpetual-chain"] as const;
export type ChainName = (typeof CHAINS)[number];

export interface ExpectedBatch {
  batch_id: number;
  seq: number;
  roots: Record<string, string>;
  claim_hash: string;
  signature: string;
}

export interface Expected {
  profile: "perpetual" | "spot" | "spot-v4.0";
  heights: Record<string, number>;
  private_key: string;
  member_key: string;
  batches: ExpectedBatch[];
}

export function loadChain(name: ChainName): { responses: { update: unknown }[]; expected: Expected } {
  const dir = join(FIXTURES, name);
  return {
    responses: JSON.parse(readFileSync(join(dir, "responses.json"), "utf8")) as { update: unknown }[],
    expected: JSON.parse(readFileSync(join(dir, "expected.json"), "utf8")) as Expected,
  };
}

export function privateKeyBytes(hex: string): Uint8Array {
  return new Uint8Array(Buffer.from(hex.replace(/^0x/, ""), "hex"));
}
