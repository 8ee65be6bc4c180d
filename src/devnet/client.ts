/** A small HTTP client for the devnet (tests, the traffic generator's users, e2e setups). */
import type { BatchView } from "./chain.js";
import { computeClaimHash, type EthSigner, type Profile } from "./shared.js";
import { toHex0x } from "../util/bytes.js";

export interface HttpAnswer {
  readonly status: number;
  readonly contentType: string;
  readonly text: string;
  /** The body parsed as JSON (undefined when it is not JSON). */
  readonly json: unknown;
}

export async function call(method: "GET" | "POST", url: string, body?: unknown): Promise<HttpAnswer> {
  const res = await fetch(url, {
    method,
    headers: {
      Accept: "application/json",
      ...(body !== undefined ? { "Content-Type": "application/json" } : {}),
    },
    ...(body !== undefined ? { body: typeof body === "string" ? body : JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text) as unknown;
  } catch {
    json = undefined;
  }
  return { status: res.status, contentType: res.headers.get("content-type") ?? "", text, json };
}

export const get = (url: string): Promise<HttpAnswer> => call("GET", url);
export const post = (url: string, body?: unknown): Promise<HttpAnswer> => call("POST", url, body);

/** The approve_new_roots body a member would post for a batch whose roots it trusts. */
export function approvalBody(
  profile: Profile,
  batch: Pick<BatchView, "batchId" | "sequenceNumber"> & { roots: Parameters<typeof computeClaimHash>[1] },
  signer: EthSigner,
): { batch_id: number; signature: string; member_key: string; claim_hash: string } {
  const claim = computeClaimHash(profile, batch.roots, batch.sequenceNumber);
  return {
    batch_id: batch.batchId,
    signature: signer.sign(claim),
    member_key: signer.memberKey,
    claim_hash: toHex0x(claim),
  };
}
