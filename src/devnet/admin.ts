/** The devnet's admin API (POST /devnet/fault, /devnet/cut, /devnet/tx_filter, /devnet/freeze): see docs/devnet.md. */
import type { Batcher } from "./batcher.js";
import type { Faults, Scope } from "./faults.js";
import type { TreeName } from "./shared.js";
import { Fields } from "./txs/fields.js";
import { HttpError, json, parseJsonBody, type Request, type Response } from "./servers/http.js";

const SCOPES = ["all", "gateway", "feeder", "availability"];
const TREES: TreeName[] = ["position", "vault", "order", "rollup_vault"];

export interface AdminContext {
  readonly faults: Faults;
  /** Absent in replay mode. */
  readonly batcher: Batcher<unknown> | undefined;
  readonly mainTree: TreeName;
  readonly blockedTxTypes: Set<string>;
  /** Freezes the exchange on the devnet's base chain (409 without one). */
  readonly freeze: () => Promise<{ frozen_batch_id: number }>;
}

function needBatcher(ctx: AdminContext): Batcher<unknown> {
  if (!ctx.batcher) throw new HttpError(409, "NOT_SUPPORTED", "type: not available in replay mode");
  return ctx.batcher;
}

export function adminHandlers(
  ctx: AdminContext,
): Record<string, (req: Request) => Response | Promise<Response>> {
  return {
    fault: async (req) => {
      const f: Fields = Fields.of(parseJsonBody(req), "");
      const type = f.str("type");
      const scopeAndPath = (): { scope: Scope | "all"; path?: string } => {
        const scope = f.has("scope") ? f.str("scope") : "all";
        if (!SCOPES.includes(scope)) f.fail("scope", `expected one of ${SCOPES.join(", ")}`);
        return { scope: scope as Scope | "all", ...(f.has("path") ? { path: f.str("path") } : {}) };
      };
      switch (type) {
        case "unavailable":
          f.only(["type", "count", "scope", "path"]);
          ctx.faults.addRequestFault("unavailable", f.int("count", 1, 1_000_000), scopeAndPath());
          break;
        case "hang":
          f.only(["type", "ms", "count", "scope", "path"]);
          ctx.faults.addRequestFault("hang", f.has("count") ? f.int("count", 1, 1_000_000) : 1, {
            ms: f.int("ms", 0, 3_600_000),
            ...scopeAndPath(),
          });
          break;
        case "truncate":
          f.only(["type", "count", "scope", "path"]);
          ctx.faults.addRequestFault(
            "truncate",
            f.has("count") ? f.int("count", 1, 1_000_000) : 1,
            scopeAndPath(),
          );
          break;
        case "wrong_root": {
          f.only(["type", "tree", "batch_id"]);
          const tree = (f.has("tree") ? f.str("tree") : ctx.mainTree) as TreeName;
          if (!TREES.includes(tree)) f.fail("tree", `expected one of ${TREES.join(", ")}`);
          const b = needBatcher(ctx);
          if (f.has("batch_id")) {
            const id = f.int("batch_id", 0, Number.MAX_SAFE_INTEGER);
            try {
              b.corrupt(id, tree);
            } catch (e) {
              throw new HttpError(404, "BATCH_NOT_FOUND", `batch_id: ${(e as Error).message}`);
            }
            return json({ ok: true, batch_id: id, tree });
          }
          ctx.faults.addWrongRoot(tree);
          return json({ ok: true, next_batch: true, tree });
        }
        case "reject_batch": {
          f.only(["type", "batch_id"]);
          const b = needBatcher(ctx);
          const id = f.has("batch_id") ? f.int("batch_id", 0, Number.MAX_SAFE_INTEGER) : b.head();
          try {
            const head = await b.reject(id);
            return json({ ok: true, rejected: id, head_batch_id: head });
          } catch (e) {
            throw new HttpError(409, "CANNOT_REJECT", `batch_id: ${(e as Error).message}`);
          }
        }
        case "clear":
          f.only(["type"]);
          ctx.faults.clear();
          break;
        default:
          f.fail("type", "expected unavailable, hang, truncate, wrong_root, reject_batch or clear");
      }
      return json({ ok: true, type });
    },
    cut: async (req) => {
      const f: Fields = Fields.of(req.body.trim() === "" ? {} : parseJsonBody(req), "").only(["allow_empty"]);
      const b = needBatcher(ctx);
      const batch = await b.cut(f.has("allow_empty") ? f.bool("allow_empty") : false);
      return json(
        batch
          ? { batch_id: batch.batchId, prev_batch_id: batch.prevBatchId, tx_count: batch.txs.length }
          : null,
      );
    },
    freeze: async () => json({ ok: true, ...(await ctx.freeze()) }),
    tx_filter: (req) => {
      const f: Fields = Fields.of(parseJsonBody(req), "").only(["blocked"]);
      const blocked = f.arr("blocked").map((t, i) => {
        if (typeof t !== "string") f.fail(`blocked.${i}`, "expected a transaction type name");
        return t;
      });
      ctx.blockedTxTypes.clear();
      for (const t of blocked) ctx.blockedTxTypes.add(t);
      return json({ ok: true, blocked });
    },
  };
}
