/**
 * The availability gateway (gateway-interface §4): get_batch_data, approve_new_roots (signature
 * recovered and checked against the committee and against the claim the devnet itself computed),
 * get_blockchain_type, and the devnet's admin API under /devnet/.
 */
import type { Approvals } from "../approvals.js";
import type { ChainView } from "../chain.js";
import { recoverAddress } from "../shared.js";
import { Fields } from "../txs/fields.js";
import { toHex0x } from "../../util/bytes.js";
import { findBatch } from "./feeder.js";
import {
  HttpError,
  intParam,
  json,
  parseJsonBody,
  Router,
  text,
  type Request,
  type Response,
} from "./http.js";

export const SIGNATURE_ACCEPTED = "signature accepted";

export interface AvailabilityContext {
  readonly chain: ChainView;
  readonly approvals: Approvals;
  readonly blockchainType: string;
  /** Admin endpoints (POST /devnet/...), by path below /devnet/. */
  readonly admin: Record<string, (req: Request) => Response | Promise<Response>>;
  readonly status: () => unknown;
}

function validateRollupParam(req: Request): boolean {
  const v = req.query.get("validate_rollup");
  if (v === null || v === "False" || v === "false") return false;
  if (v === "True" || v === "true") return true;
  throw new HttpError(
    400,
    "MALFORMED_REQUEST",
    `validate_rollup: expected True or False, got ${JSON.stringify(v)}`,
  );
}

export function availabilityRouter(ctx: AvailabilityContext): Router {
  const r = new Router();
  r.on("GET", "/availability_gateway/get_batch_data", (req) => {
    const rollup = validateRollupParam(req);
    // A batch that is not cut yet is `{"update": null}`, as StarkWare's mock availability gateway
    // answers: members without a feeder poll this endpoint and read null as "not yet".
    const batch = ctx.chain.batch(intParam(req, "batch_id"));
    return json({ update: batch ? batch.update(rollup) : null });
  });
  r.on("POST", "/availability_gateway/approve_new_roots", (req) => approve(ctx, req));
  r.on("POST", "/availability_gateway/get_blockchain_type", () =>
    text(ctx.blockchainType, "application/str"),
  );
  r.on("GET", "/devnet/status", () => json(ctx.status()));
  r.on("GET", "/devnet/quorum", (req) => json(ctx.approvals.state(findBatch(ctx.chain, req).batchId)));
  for (const [path, h] of Object.entries(ctx.admin)) r.on("POST", `/devnet/${path}`, h);
  return r;
}

function approve(ctx: AvailabilityContext, req: Request): Response {
  const f: Fields = Fields.of(parseJsonBody(req), "");
  f.only(["batch_id", "signature", "member_key", "claim_hash"]);
  const batchId = f.int("batch_id", 0, Number.MAX_SAFE_INTEGER);
  const sig = f.get("signature");
  if (typeof sig !== "string") {
    f.fail("signature", `expected a 0x-prefixed hex string: the base chain is ${ctx.blockchainType}`);
  }
  if (!/^0x[0-9a-fA-F]{130}$/.test(sig))
    f.fail("signature", "expected 0x followed by 65 bytes of hex (r, s, v)");
  const memberKey = f.str("member_key");
  if (!/^0x[0-9a-fA-F]{40}$/.test(memberKey)) f.fail("member_key", "expected a 0x-prefixed 20-byte address");
  const claimHex = f.str("claim_hash");
  if (!/^0x[0-9a-fA-F]{64}$/.test(claimHex)) f.fail("claim_hash", "expected 0x followed by 32 bytes of hex");

  const batch = ctx.chain.batch(batchId);
  if (!batch) throw new HttpError(404, "BATCH_NOT_FOUND", `batch_id: no batch ${batchId}`);
  if (batch.rejected) throw new HttpError(409, "BATCH_REJECTED", `batch_id: batch ${batchId} was rejected`);

  const claim = new Uint8Array(Buffer.from(claimHex.slice(2), "hex"));
  let signer: string;
  try {
    signer = recoverAddress(claim, sig);
  } catch (e) {
    throw new HttpError(400, "INVALID_SIGNATURE", `signature: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (signer.toLowerCase() !== memberKey.toLowerCase()) {
    throw new HttpError(
      400,
      "SIGNATURE_MISMATCH",
      `signature: recovers to ${signer}, not member_key ${memberKey}`,
    );
  }
  if (!ctx.approvals.inCommittee(signer)) {
    throw new HttpError(403, "NOT_IN_COMMITTEE", `member_key: ${signer} is not a committee member`);
  }
  const expected = toHex0x(batch.expectedClaim);
  if (claimHex.toLowerCase() !== expected) {
    throw new HttpError(
      400,
      "WRONG_CLAIM",
      `claim_hash: ${claimHex} is not the claim of batch ${batchId} (expected ${expected})`,
    );
  }
  ctx.approvals.record(batchId, signer, sig);
  return text(SIGNATURE_ACCEPTED, "application/str");
}
