import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeProof, verifyProof, type Proof } from "../../src/escape/proof.js";
import { chainStore, engine, type ChainStore } from "../helpers/chain-store.js";
import { removeTempDirs } from "../helpers/temp-dir.js";

/** Flips one hex digit of a string (after any 0x prefix). */
function flipDigit(s: string, at: number): string {
  const start = s.startsWith("0x") ? 2 : 0;
  const i = start + (at % (s.length - start));
  const c = s[i]!;
  const repl = /[0-9]/.test(c)
    ? String((Number(c) + 1) % 10)
    : c === "f"
      ? "e"
      : String.fromCharCode(c.charCodeAt(0) + 1);
  return s.slice(0, i) + repl + s.slice(i + 1);
}

/** Every string in the proof's leaf, path and root, as a setter that changes one digit of it. */
function mutations(p: Proof): { what: string; apply: (q: Proof) => void }[] {
  const out: { what: string; apply: (q: Proof) => void }[] = [];
  const add = (what: string, get: (q: Proof) => Record<string, unknown>, key: string): void => {
    out.push({
      what,
      apply: (q) => {
        const o = get(q);
        o[key] = flipDigit(String(o[key]), 7);
      },
    });
  };
  add("root", (q) => q as unknown as Record<string, unknown>, "root");
  add("leaf_hash", (q) => q as unknown as Record<string, unknown>, "leaf_hash");
  for (const k of Object.keys(p.leaf)) {
    if (typeof p.leaf[k] === "string") add(`leaf.${k}`, (q) => q.leaf, k);
  }
  if (p.leaf.assets) {
    for (const [asset, v] of Object.entries(p.leaf.assets as Record<string, Record<string, string>>)) {
      for (const k of Object.keys(v))
        add(
          `asset ${asset}.${k}`,
          (q) => (q.leaf.assets as Record<string, Record<string, unknown>>)[asset]!,
          k,
        );
    }
  }
  p.siblings?.forEach((_, i) =>
    add(`siblings[${i}]`, (q) => q.siblings as unknown as Record<string, unknown>, String(i)),
  );
  p.steps?.forEach((s, i) => {
    for (const k of s.kind === "binary" ? ["left", "right"] : ["bottom", "path"]) {
      add(`steps[${i}].${k}`, (q) => q.steps![i] as unknown as Record<string, unknown>, k);
    }
  });
  return out;
}

const stores: Partial<Record<string, ChainStore>> = {};
beforeAll(async () => {
  stores.spot = await chainStore("spot-chain");
  stores.v40 = await chainStore("spot-v40-chain");
  stores.perp = await chainStore("perpetual-chain");
});
afterAll(async () => {
  for (const s of Object.values(stores)) await s!.store.close();
  await removeTempDirs();
});

/** Ids present in a chain's updates for a tree (so some are non-empty at the last batch). */
function idsOf(s: ChainStore, key: string): string[] {
  const ids = new Set<string>();
  for (const r of s.responses)
    for (const id of Object.keys(((r.update as Record<string, unknown>)[key] ?? {}) as object)) ids.add(id);
  return [...ids];
}

const cases = [
  ["spot", "vault", "vaults"],
  ["spot", "rollup_vault", "rollup_vaults"],
  ["spot", "order", "orders"],
  ["v40", "vault", "vaults"],
  ["v40", "order", "orders"],
  ["perp", "position", "positions"],
  ["perp", "order", "orders"],
] as const;

describe.each(cases)("proofs, %s %s tree", (which, object, key) => {
  it("verify for existing and empty leaves at the batch's root, and fail with any digit changed", async () => {
    const s = stores[which]!;
    const last = s.expected.batches[s.expected.batches.length - 1]!;
    const ids = idsOf(s, key);
    const candidates = [...ids.slice(0, 5), "0", "123456"];
    let full = 0;
    let empty = 0;
    for (const id of candidates) {
      const proof = await makeProof(s.store, engine, object, id);
      expect(proof.batch_id).toBe(last.batch_id);
      expect(proof.root).toBe(last.roots[proof.tree]);
      expect(await verifyProof(engine, proof)).toMatchObject({ valid: true });
      expect(await verifyProof(engine, proof, proof.root)).toMatchObject({ valid: true });
      expect(await verifyProof(engine, proof, "0x1234")).toMatchObject({ valid: false });
      if (proof.empty) empty++;
      else full++;
      // A proof survives JSON as the CLI writes it.
      const json = JSON.parse(JSON.stringify(proof)) as Proof;
      expect(await verifyProof(engine, json)).toMatchObject({ valid: true });
      for (const m of mutations(proof)) {
        const q = structuredClone(json);
        m.apply(q);
        const verdict = await verifyProof(engine, q);
        expect(verdict.valid, `${object} ${id}: changed ${m.what}`).toBe(false);
      }
    }
    expect(full).toBeGreaterThan(0);
    expect(empty).toBeGreaterThan(0);
    // An older batch's proof verifies against that batch's root only.
    const old = await makeProof(s.store, engine, object, ids[0]!, 0);
    expect(old.root).toBe(s.expected.batches[0]!.roots[old.tree]);
    expect(await verifyProof(engine, old)).toMatchObject({ valid: true });
    if (old.root !== last.roots[old.tree]) {
      expect(await verifyProof(engine, old, last.roots[old.tree])).toMatchObject({ valid: false });
    }
  });
});

describe("proof shape checks", () => {
  it("refuses a Patricia proof whose leaf id does not follow the steps", async () => {
    const s = stores.spot!;
    const id = idsOf(s, "orders")[1]!;
    const proof = await makeProof(s.store, engine, "order", id);
    if (!proof.empty) {
      const q = structuredClone(proof);
      q.leaf_id = (BigInt(id) ^ 1n).toString();
      expect((await verifyProof(engine, q)).valid).toBe(false);
    }
    const q2 = structuredClone(proof);
    q2.steps = [];
    expect((await verifyProof(engine, q2)).valid).toBe(false);
  });
});
