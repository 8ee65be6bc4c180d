/** The feeder gateway (read-only batch information) of variant P and variant G (gateway-interface §4). */
import type { BatchView, ChainView } from "../chain.js";
import { batchInfoGFull, batchInfoGv2, batchInfoP } from "../serialize.js";
import { HttpError, intParam, json, Router, type Request } from "./http.js";

export function findBatch(chain: ChainView, req: Request): BatchView {
  const id = intParam(req, "batch_id");
  const b = chain.batch(id);
  if (!b) throw new HttpError(404, "BATCH_NOT_FOUND", `batch_id: no batch ${id}`);
  return b;
}

const HEX = /^(0x)?[0-9a-fA-F]{1,64}$/;

function rootParam(req: Request, name: string): bigint {
  const v = req.query.get(name);
  if (v === null) throw new HttpError(400, "MALFORMED_REQUEST", `${name}: missing query parameter`);
  if (!HEX.test(v))
    throw new HttpError(400, "MALFORMED_REQUEST", `${name}: expected a hex root, got ${JSON.stringify(v)}`);
  return BigInt(v.startsWith("0x") ? v : "0x" + v);
}

export function feederRouter(chain: ChainView): Router {
  const r = new Router();
  const prev = (req: Request): ReturnType<typeof json> => json(findBatch(chain, req).prevBatchId);
  if (chain.profile.variant === "P") {
    r.on("GET", "/feeder_gateway/get_batch_info", (req) => json(batchInfoP(chain, findBatch(chain, req))));
    r.on("GET", "/feeder_gateway/get_last_batch_id", () => json(chain.lastBatchId()));
    r.on("GET", "/get_prev_batch_id", prev);
    // Convenience alias with the prefix the other feeder paths carry.
    r.on("GET", "/feeder_gateway/get_prev_batch_id", prev);
    return r;
  }
  r.on("GET", "/feeder_gateway/v2/get_batch_enclosing_ids", (req) => {
    const b = findBatch(chain, req);
    const ids = b.txs.map((t) => t.txId);
    // First and last transaction id of the batch; [-1, -1] for a batch without transactions.
    return json(ids.length ? [Math.min(...ids), Math.max(...ids)] : [-1, -1]);
  });
  r.on("GET", "/feeder_gateway/get_batch_ids", (req) => {
    const vaultRoot = rootParam(req, "vault_root");
    const orderRoot = rootParam(req, "order_root");
    const seq = intParam(req, "sequence_number");
    const out: number[] = [];
    for (let id = 0; id <= chain.lastBatchId(); id++) {
      const b = chain.batch(id)!;
      if (
        b.sequenceNumber === seq &&
        BigInt("0x" + (b.stated.vault ?? "0")) === vaultRoot &&
        BigInt("0x" + (b.stated.order ?? "0")) === orderRoot
      ) {
        out.push(id);
      }
    }
    return json(out);
  });
  r.on("GET", "/feeder_gateway/get_batch_info", (req) => json(batchInfoGFull(chain, findBatch(chain, req))));
  r.on("GET", "/feeder_gateway/v2/get_batch_info", (req) => json(batchInfoGv2(findBatch(chain, req))));
  r.on("GET", "/feeder_gateway/v2/get_last_batch_id", () => json(chain.lastBatchId()));
  r.on("GET", "/feeder_gateway/v2/get_prev_batch_id", prev);
  return r;
}
