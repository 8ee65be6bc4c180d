/**
 * Replay mode: serves a recorded chain of `get_batch_data` answers (element N is the body for batch
 * N) and expects, for approvals, either the claims of a given expected.json or the claims computed
 * from the recorded roots and the sequence numbers implied by the prev_batch_id chain.
 */
import { readFile } from "node:fs/promises";
import type { BatchView, ChainView } from "./chain.js";
import {
  computeClaimHash,
  makeProfile,
  type Profile,
  type ProfileName,
  type Roots,
  type TreeName,
  TREE_NAMES,
  TREES,
} from "./shared.js";
import { hexToBytes32 } from "../util/bytes.js";

interface Expected {
  readonly profile?: ProfileName;
  readonly heights?: Partial<Record<TreeName, number>>;
  readonly batches?: readonly { batch_id: number; seq?: number; claim_hash?: string }[];
}

/** The key of each tree's stated root in the update → the tree. */
const ROOT_KEYS: Record<string, TreeName> = Object.fromEntries(
  TREE_NAMES.map((t) => [TREES[t].gatewayRoot, t]),
) as Record<string, TreeName>;

export interface ReplaySource {
  readonly responses: unknown[];
  readonly expected: Expected | undefined;
}

export async function loadReplay(responsesFile: string, expectedFile?: string): Promise<ReplaySource> {
  const responses = JSON.parse(await readFile(responsesFile, "utf8")) as unknown;
  if (!Array.isArray(responses))
    throw new Error(`${responsesFile}: expected a JSON array of get_batch_data answers`);
  const expected = expectedFile ? (JSON.parse(await readFile(expectedFile, "utf8")) as Expected) : undefined;
  return { responses, expected };
}

/** The profile of a replayed chain: expected.json's when given, else by variant (P perpetual, G spot). */
export function replayProfile(src: ReplaySource, variant: "P" | "G", fallback?: ProfileName): Profile {
  if (src.expected?.profile) return makeProfile(src.expected.profile, src.expected.heights ?? {});
  return makeProfile(fallback ?? (variant === "P" ? "perpetual" : "spot"));
}

export class ReplayChain implements ChainView {
  private readonly views: BatchView[] = [];

  constructor(
    readonly profile: Profile,
    readonly genesis: Partial<Record<TreeName, string>>,
    src: ReplaySource,
    nowMs = Date.now(),
  ) {
    src.responses.forEach((body, batchId) => {
      const update = ((body as { update?: unknown }).update ?? {}) as Record<string, unknown>;
      const prevBatchId = typeof update.prev_batch_id === "number" ? update.prev_batch_id : batchId - 1;
      const prev = prevBatchId >= 0 ? this.views[prevBatchId] : undefined;
      const sequenceNumber = prev ? prev.sequenceNumber + 1 : 0;
      const stated: Partial<Record<TreeName, string>> = {};
      const roots: Roots = {};
      for (const [key, tree] of Object.entries(ROOT_KEYS)) {
        const v = update[key];
        if (typeof v !== "string") continue;
        stated[tree] = v.padStart(64, "0");
        const b = hexToBytes32(v);
        if (b) roots[tree] = b;
      }
      const exp = src.expected?.batches?.find((e) => e.batch_id === batchId);
      const expectedClaim = exp?.claim_hash
        ? new Uint8Array(Buffer.from(exp.claim_hash.replace(/^0x/, ""), "hex"))
        : roots[profile.main.name] && roots[profile.order.name]
          ? computeClaimHash(profile, roots, exp?.seq ?? sequenceNumber)
          : new Uint8Array(32);
      this.views.push({
        batchId,
        prevBatchId,
        sequenceNumber: exp?.seq ?? sequenceNumber,
        timeCreated: Math.floor(nowMs / 1000),
        txs: [],
        rejected: false,
        stated,
        expectedClaim,
        update(validateRollup: boolean): Record<string, unknown> {
          const out = { ...update };
          if (!validateRollup) {
            delete out.rollup_vaults;
            delete out.rollup_vault_root;
          }
          return out;
        },
      });
    });
  }

  lastBatchId(): number {
    return this.views.length - 1;
  }

  batch(id: number): BatchView | undefined {
    return Number.isInteger(id) ? this.views[id] : undefined;
  }
}
