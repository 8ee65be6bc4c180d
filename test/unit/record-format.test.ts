import { describe, expect, it } from "vitest";
import { loadNativeAddon } from "../../src/native/addon.js";
import {
  BINARY_GENS_AT,
  BINARY_RECORD_LENGTH,
  CHECKPOINT_STEP,
  EDGE_HEAD_LENGTH,
  EDGE_LENGTH_AT,
  EDGE_PATH_AT,
  EDGE_RECORD_LENGTH,
  GEN_BYTES,
  HASH_BYTES,
  MAX_CACHED_RECORD_LENGTH,
  NODE_FORMAT,
} from "../../src/storage/records/node-record.js";
import { merkleEdgeLength } from "../../src/verifier/trees/format/merkle-edge.js";
import { nativeAvailable } from "../helpers/native-required.js";

/**
 * The record layout is stated twice, once for each language: native/trees/record_format.h, which
 * the addon exports as `recordFormat`, and src/storage/records/node-record.ts. They must agree number for
 * number, or the native walks would write records the JavaScript ones misread.
 */
const addon = loadNativeAddon() as unknown as { recordFormat?: Record<string, number> } | null;
const haveAddon = nativeAvailable("the native addon", addon !== null);

describe("the record format", () => {
  it("is the layout node-record.ts describes (binary 72 bytes, Patricia edge 69, Merkle edges never 72)", () => {
    expect([HASH_BYTES, GEN_BYTES, BINARY_RECORD_LENGTH, EDGE_HEAD_LENGTH, EDGE_RECORD_LENGTH]).toEqual([
      32, 4, 72, 65, 69,
    ]);
    for (let h = 1; h <= 255; h++) expect(merkleEdgeLength(h)).not.toBe(BINARY_RECORD_LENGTH);
    expect(merkleEdgeLength(CHECKPOINT_STEP)).toBeLessThanOrEqual(MAX_CACHED_RECORD_LENGTH);
    expect(merkleEdgeLength(CHECKPOINT_STEP + 1)).toBeGreaterThan(MAX_CACHED_RECORD_LENGTH);
  });

  it.skipIf(!haveAddon)("the addon is compiled with is node-record.ts's, number for number", () => {
    expect(addon!.recordFormat).toEqual({
      nodeFormat: NODE_FORMAT,
      hashBytes: HASH_BYTES,
      genBytes: GEN_BYTES,
      binaryLength: BINARY_RECORD_LENGTH,
      binaryGensAt: BINARY_GENS_AT,
      edgePathAt: EDGE_PATH_AT,
      edgeLengthAt: EDGE_LENGTH_AT,
      edgeHeadLength: EDGE_HEAD_LENGTH,
      edgeLength: EDGE_RECORD_LENGTH,
      checkpointStep: CHECKPOINT_STEP,
      maxCachedLength: MAX_CACHED_RECORD_LENGTH,
    });
    expect(Object.isFrozen(addon!.recordFormat)).toBe(true);
  });
});
