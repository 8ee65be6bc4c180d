import { createHash } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DacdError } from "../../src/errors.js";
import { dumpStore } from "../../src/escape/dump.js";
import { loadDump } from "../../src/escape/load.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { chainStore, engine } from "../helpers/chain-store.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";
import { parseLeafLine } from "../../src/escape/formats.js";
import { positionValues } from "../../src/escape/onchain/perpetual.js";
import { assetWord, B63, collateralWord } from "../../src/model/leaf-rules.js";
import {
  DEFAULT_HEIGHTS,
  keptTrees,
  makeProfile,
  PROFILE_NAMES,
  siblingProfiles,
  TREES,
} from "../../src/model/profile.js";
import { parseStateUpdate, updateTrees } from "../../src/wire/parse-update.js";

/**
 * The leaf rules are one module's (src/model/leaf-rules.ts): a leaf the gateway's parser refuses
 * is refused by the dump parser too (what `dacd load` and a proof's leaf go through), each with a
 * one-line error naming where, and a leaf one takes the other takes with the same value.
 */

const perpetual = makeProfile("perpetual");
const spot = makeProfile("spot");
type Json = Record<string, unknown>;

/** The wire parser's verdict on one position: its leaf, or the refusal's message. */
function wirePosition(leaf: Json): unknown {
  const update = {
    prev_batch_id: 0,
    positions: { "5": leaf },
    position_root: "0",
    orders: {},
    order_root: "0",
  };
  try {
    return parseStateUpdate(update, perpetual, 1).changes.position!.get(5n);
  } catch (err) {
    expect(err).toBeInstanceOf(DacdError);
    expect((err as DacdError).code).toBe("BAD_INPUT");
    return (err as Error).message;
  }
}

/** The dump parser's verdict on the same position, written as a positions.jsonl line. */
function dumpPosition(leaf: Json): unknown {
  try {
    return parseLeafLine("position", JSON.stringify({ position_id: "5", ...leaf }), "positions.jsonl line 2")
      .leaf;
  } catch (err) {
    expect(err).toBeInstanceOf(DacdError);
    expect((err as DacdError).code).toBe("BAD_INPUT");
    return (err as Error).message;
  }
}

const KEY = "0x" + "3".repeat(60);
const position = (assets: Json, over: Json = {}): Json => ({
  public_key: KEY,
  collateral_balance: "-12",
  assets,
  ...over,
});
const asset = (balance: string, funding = "7"): Json => ({ balance, cached_funding_index: funding });

describe("a position's rules, wire and dump alike", () => {
  const refused: [string, Json, RegExp, RegExp][] = [
    [
      "a public key of 65 hex digits (a leading zero)",
      position({}, { public_key: "0x0" + "3".repeat(64) }),
      /^batch 1, field update\.positions\.5\.public_key: expected a 0x-prefixed hex string/,
      /^positions\.jsonl line 2: public_key "0x0333.*" is malformed \(0x and 1 to 64 lower-case hex digits\)$/,
    ],
    [
      "a public key of 5000 hex digits",
      position({}, { public_key: "0x" + "1".repeat(5000) }),
      /^batch 1, field update\.positions\.5\.public_key: expected a 0x-prefixed hex string, got the string "0x1{38}…"$/,
      /^positions\.jsonl line 2: public_key "0x1{88}…" is malformed/,
    ],
    [
      "an asset id of 65 hex digits",
      position({ ["0x0" + "0".repeat(62) + "1f"]: asset("1") }),
      /^batch 1, field update\.positions\.5\.assets\.0x0{63}1f: expected a 0x-prefixed hex string/,
      /^positions\.jsonl line 2: asset id "0x0{63}1f" is malformed/,
    ],
    [
      "one asset id spelled twice (0x1f and 0x01f)",
      position({ "0x1f": asset("1"), "0x01f": asset("2") }),
      /^batch 1, field update\.positions\.5\.assets: asset id 31 appears twice$/,
      /^positions\.jsonl line 2: assets: asset id 31 appears twice$/,
    ],
    [
      "an asset id of 2^120",
      position({ ["0x1" + "0".repeat(30)]: asset("1") }),
      /^batch 1, field update\.positions\.5\.assets\.0x10{30}: value is not below 1329227995784915872903807060280344576$/,
      /^positions\.jsonl line 2: asset id 1329227995784915872903807060280344576 is out of range$/,
    ],
    [
      "a balance of 2^63",
      position({ "0x1f": asset(B63.toString()) }),
      /field update\.positions\.5\.assets\.0x1f\.balance: 9223372036854775808 is out of range/,
      /^positions\.jsonl line 2: balance 9223372036854775808 is out of range$/,
    ],
    [
      "a collateral below −2^63",
      position({}, { collateral_balance: (-B63 - 1n).toString() }),
      /field update\.positions\.5\.collateral_balance: -9223372036854775809 is out of range/,
      /^positions\.jsonl line 2: collateral_balance -9223372036854775809 is out of range$/,
    ],
    [
      "a funding index of 81 digits",
      position({ "0x1f": asset("1", "1" + "0".repeat(80)) }),
      /field update\.positions\.5\.assets\.0x1f\.cached_funding_index: expected a decimal string/,
      /^positions\.jsonl line 2: cached_funding_index "10{80}" is malformed$/,
    ],
  ];
  for (const [what, leaf, wire, dump] of refused)
    it(`refuses ${what} in both`, () => {
      expect(wirePosition(leaf)).toMatch(wire);
      expect(dumpPosition(leaf)).toMatch(dump);
    });

  it("refuses 2^16 assets in both, before reading them", () => {
    const assets = Object.fromEntries(
      Array.from({ length: 1 << 16 }, (_, i) => ["0x" + (i + 1).toString(16), asset("1")]),
    );
    expect(wirePosition(position(assets))).toMatch(
      /^batch 1, field update\.positions\.5\.assets: 65536 assets; a position holds fewer than 65536$/,
    );
    expect(dumpPosition(position(assets))).toMatch(
      /^positions\.jsonl line 2: assets: 65536 assets; a position holds fewer than 65536$/,
    );
  });

  it("takes the same position in both, with its assets ascending by id", () => {
    const leaf = position({ "0x20": asset("-3", "-9"), "0x1f": asset((B63 - 1n).toString(), "0") });
    const wire = wirePosition(leaf);
    expect(wire).toEqual({
      publicKey: BigInt(KEY),
      collateral: -12n,
      assets: [
        { assetId: 0x1fn, balance: B63 - 1n, fundingIndex: 0n },
        { assetId: 0x20n, balance: -3n, fundingIndex: -9n },
      ],
    });
    expect(dumpPosition(leaf)).toEqual(wire);
  });
});

describe("a vault's and an order's rules, wire and dump alike", () => {
  const wireVault = (leaf: Json): unknown => {
    const update = { prev_batch_id: 0, vaults: { "3": leaf }, vault_root: "0", orders: {}, order_root: "0" };
    try {
      return parseStateUpdate(update, spot, 1).changes.vault!.get(3n);
    } catch (err) {
      return (err as Error).message;
    }
  };
  const dumpVault = (key: string, token: string, balance: string): unknown => {
    try {
      return parseLeafLine("vault", `3,${key},${token},${balance}`, "vaults.csv line 4").leaf;
    } catch (err) {
      return (err as Error).message;
    }
  };

  it("refuses a key of 65 hex digits in both", () => {
    const key = "0x0" + "a".repeat(64);
    expect(wireVault({ stark_key: key, token: "0x2", balance: "1" })).toMatch(
      /^batch 1, field update\.vaults\.3\.stark_key: expected a 0x-prefixed hex string/,
    );
    expect(dumpVault(key, "0x2", "1")).toMatch(/^vaults\.csv line 4: key "0x0a{64}" is malformed/);
  });

  it("refuses a vault with a balance and token 0 in both", () => {
    expect(wireVault({ stark_key: "0x1", token: "0x0", balance: "1" })).toMatch(
      /^batch 1, field update\.vaults\.3\.token: is 0 in a vault with a balance$/,
    );
    expect(dumpVault("0x1", "0x0", "1")).toMatch(
      /^vaults\.csv line 4: a vault with a balance needs a key and a token$/,
    );
  });

  it("takes a balance of 2^63 − 1 and refuses 2^63 in both", () => {
    expect(wireVault({ stark_key: "0x1", token: "0x2", balance: (B63 - 1n).toString() })).toEqual({
      key: 1n,
      token: 2n,
      balance: B63 - 1n,
    });
    expect(dumpVault("0x1", "0x2", (B63 - 1n).toString())).toEqual({ key: 1n, token: 2n, balance: B63 - 1n });
    expect(wireVault({ stark_key: "0x1", token: "0x2", balance: B63.toString() })).toMatch(/out of range/);
    expect(dumpVault("0x1", "0x2", B63.toString())).toMatch(
      /^vaults\.csv line 4: balance \d+ is out of range$/,
    );
  });

  it("bounds an order's amount by the profile's data: 2^64 in perpetual, 2^63 in spot", () => {
    const amount = (p: typeof spot, v: bigint): unknown => {
      try {
        return parseLeafLine("order", `9,${v}`, "orders.csv line 2", p.orderAmountLimit).leaf;
      } catch (err) {
        return (err as Error).message;
      }
    };
    expect(amount(perpetual, B63)).toBe(B63);
    expect(amount(perpetual, 2n * B63)).toMatch(/^orders\.csv line 2: fulfilled_amount \d+ is out of range$/);
    expect(amount(spot, B63 - 1n)).toBe(B63 - 1n);
    expect(amount(spot, B63)).toMatch(/out of range/);
    expect(() => parseLeafLine("order", "9,1", "orders.csv line 2")).toThrow(TypeError);
  });
});

describe("the position's words, one encoding for the trees and the escape", () => {
  it("packs an asset as id << 128 | biased funding << 64 | biased balance, and the last word as biased collateral << 16 | count", () => {
    const a = { assetId: 0x1fn, balance: -1n, fundingIndex: 2n };
    expect(assetWord(a)).toBe((0x1fn << 128n) + ((B63 + 2n) << 64n) + (B63 - 1n));
    const p = { publicKey: 5n, collateral: -B63, assets: [a] };
    expect(collateralWord(p)).toBe(1n);
    expect(positionValues(p)).toEqual([assetWord(a), 5n, 1n]);
  });
});

describe("profiles as data", () => {
  it("builds each profile's trees, heights and gateway keys from the tables", () => {
    expect(
      updateTrees(perpetual).map((t) => [t.spec.name, t.spec.kind, t.spec.height, t.leavesKey, t.rootKey]),
    ).toEqual([
      ["position", "merkle", 64, "positions", "position_root"],
      ["order", "merkle", 64, "orders", "order_root"],
    ]);
    expect(
      updateTrees(spot, { validateRollup: true }).map((t) => [
        t.spec.name,
        t.spec.kind,
        t.spec.height,
        t.spec.leaf,
        t.leavesKey,
      ]),
    ).toEqual([
      ["vault", "merkle", 31, "vault", "vaults"],
      ["order", "patricia", 251, "order", "orders"],
      ["rollup_vault", "merkle", 31, "vault", "rollup_vaults"],
    ]);
    expect(keptTrees(makeProfile("spot-v4.0"), true).map((t) => [t.name, t.kind, t.height])).toEqual([
      ["vault", "merkle", 31],
      ["order", "merkle", 63],
    ]);
    expect(DEFAULT_HEIGHTS).toEqual({
      perpetual: { position: 64, order: 64 },
      spot: { vault: 31, order: 251, rollup_vault: 31 },
      "spot-v4.0": { vault: 31, order: 63 },
    });
    expect(TREES.rollup_vault.gatewayRoot).toBe("rollup_vault_root");
    expect(siblingProfiles("spot")).toEqual(["spot-v4.0"]);
    expect(siblingProfiles("perpetual")).toEqual([]);
    for (const name of PROFILE_NAMES) expect(makeProfile(name).name).toBe(name);
  });

  it("refuses an update key of another profile's tree, and a height outside 1..251", () => {
    const update = {
      prev_batch_id: 0,
      vaults: {},
      vault_root: "0",
      orders: {},
      order_root: "0",
      positions: {},
    };
    expect(() => parseStateUpdate(update, spot, 1)).toThrow(
      /^batch 1, field update\.positions: unexpected field$/,
    );
    expect(() => makeProfile("spot", { order: 252 })).toThrow(
      /tree height for order must be an integer in 1\.\.251/,
    );
  });
});

describe("dacd load of a dump whose position breaks the rules", () => {
  afterAll(removeTempDirs);

  /**
   * Dumps batch 1 of the perpetual chain, rewrites the first position with an asset with `edit`,
   * fixes the manifest's size and digest (whoever wrote the dump can), and loads it.
   */
  async function loadEdited(edit: (position: Record<string, unknown>) => void): Promise<unknown> {
    const src = await chainStore("perpetual-chain");
    const out = join(await tempDir(), "dump");
    try {
      await dumpStore(src.store, engine, { outDir: out, batchId: 1 });
    } finally {
      await src.store.close();
    }
    const file = join(out, "positions.jsonl");
    const lines = (await readFile(file, "utf8")).split("\n");
    const i = lines.findIndex((l) => l !== "" && Object.keys(JSON.parse(l).assets as object).length > 0);
    expect(i).toBeGreaterThanOrEqual(0);
    const position = JSON.parse(lines[i]!) as Record<string, unknown>;
    edit(position);
    lines[i] = JSON.stringify(position);
    const text = lines.join("\n");
    await writeFile(file, text);
    const manifestFile = join(out, "manifest.json");
    const manifest = JSON.parse(await readFile(manifestFile, "utf8")) as {
      trees: { position: { bytes: number; sha256: string } };
    };
    manifest.trees.position.bytes = Buffer.byteLength(text);
    manifest.trees.position.sha256 = createHash("sha256").update(text).digest("hex");
    await writeFile(manifestFile, JSON.stringify(manifest));
    const dst = await LevelStore.open(join(await tempDir(), "db"));
    try {
      await loadDump(dst, engine, { fromDir: out });
      return "loaded";
    } catch (err) {
      return err;
    } finally {
      await dst.close();
    }
  }

  it("refuses one asset id spelled twice, naming the line", async () => {
    const err = await loadEdited((p) => {
      const assets = p.assets as Record<string, unknown>;
      const [id, value] = Object.entries(assets)[0]!;
      assets["0x0" + id.slice(2)] = value;
    });
    expect(err).toBeInstanceOf(DacdError);
    expect((err as Error).message).toMatch(/^positions\.jsonl line \d+: assets: asset id \d+ appears twice$/);
  }, 60_000);

  it("refuses a public key of 65 hex digits, naming the line", async () => {
    const err = await loadEdited((p) => {
      p.public_key = "0x" + (p.public_key as string).slice(2).padStart(65, "0");
    });
    expect(err).toBeInstanceOf(DacdError);
    expect((err as Error).message).toMatch(
      /^positions\.jsonl line \d+: public_key "0x0[0-9a-f]{64}" is malformed/,
    );
  }, 60_000);
});
