import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CONTROL_SOCKET } from "../../src/control/server.js";
import { dacdAsync } from "../helpers/dacd-cli.js";
import { freePort } from "../helpers/free-port.js";
import { signingMember as startSigningMember } from "../helpers/signing-member.js";
import { loadChain, type ChainName } from "../helpers/vectors.js";

/**
 * On-chain escape proofs (`dacd proof … --format starkex`, `GET /v1/escape/…`) from a member that
 * is signing: through its control socket and its escape API they are the same, they pass
 * `dacd verify-proof`, and a stopped copy of the store gives the same again. Exit codes and the
 * API's errors for what has no on-chain escape.
 */

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A member that has signed the whole chain, its escape API on a free port. */
async function signingMember(chain: ChainName) {
  return startSigningMember(
    chain,
    [`escape_api_port: ${await freePort()}`, "escape_api_rate_limit: 100000"].join("\n"),
    cleanups,
  );
}

async function get(
  url: string,
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const res = await fetch(url);
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

/** Ids of non-empty leaves at the chain's last batch (the last update's, so they are still there). */
function someIds(chain: ChainName, key: string, n: number): string[] {
  const { responses } = loadChain(chain);
  const last = responses[responses.length - 1]!.update as Record<string, Record<string, unknown>>;
  return Object.keys(last[key] ?? {}).slice(0, n);
}

describe.each([
  ["spot-chain", "vault", "vaults", "vault_root"],
  ["perpetual-chain", "position", "positions", "position_root"],
] as const)("on-chain escape proofs from a signing member (%s)", (chain, tree, key, rootField) => {
  it("socket, API and a stopped copy give the same proofs; verify-proof accepts them", async () => {
    const m = await signingMember(chain);
    const cfg = ["--config", m.configPath];
    const work = await mkdtemp(join(tmpdir(), "dacd-escape-onchain-"));
    cleanups.push(() => rm(work, { recursive: true, force: true }));
    const last = m.expected.batches.at(-1)!;
    const top = String(2n ** (tree === "vault" ? 31n : 64n) - 1n);
    const ids = [...someIds(chain, key, 2), "0", top];

    const live: unknown[] = [];
    for (const id of ids) {
      for (const batch of [undefined, 0]) {
        const args = batch === undefined ? [] : ["--batch", String(batch)];
        const cli = await dacdAsync(["proof", ...cfg, tree, id, "--format", "starkex", ...args]);
        expect(cli.err).toBe("");
        expect(cli.code).toBe(0);
        const proof = JSON.parse(cli.out) as Record<string, unknown>;
        const api = await get(
          `${m.api}/v1/escape/${tree}/${id}${batch === undefined ? "" : `?batch=${batch}`}`,
        );
        expect(api.status).toBe(200);
        expect(api.headers.get("cache-control")).toBe(
          batch === undefined ? "public, max-age=5" : "public, max-age=86400",
        );
        expect(api.body).toEqual(proof);
        const b = m.expected.batches[batch ?? m.expected.batches.length - 1]!;
        expect(proof).toMatchObject({ batch_id: b.batch_id, [rootField]: "0x" + b.roots[tree] });
        const plain = await dacdAsync(["proof", ...cfg, tree, id, ...args]);
        expect(proof.empty).toBe((JSON.parse(plain.out) as { empty: boolean }).empty);
        if (id === top) expect(proof.empty).toBe(true);
        if (batch === undefined) live.push(proof);

        const file = join(work, `${id}-${batch ?? "latest"}.json`);
        await writeFile(file, cli.out);
        const verdict = await dacdAsync(["verify-proof", file, "--root", b.roots[tree]!]);
        expect(verdict.code).toBe(0);
        expect(JSON.parse(verdict.out)).toMatchObject({ valid: true });
      }
    }

    // A flipped bit in a word of the proof: refused, exit 1, with the row named.
    const tampered = structuredClone(live[0]) as Record<string, string[]>;
    const words = tampered[tree === "vault" ? "escape_proof" : "merkle_proof"]!;
    words[9] = "0x" + (BigInt(words[9]!) ^ (1n << 200n)).toString(16).padStart(64, "0");
    await writeFile(join(work, "tampered.json"), JSON.stringify(tampered));
    const refused = await dacdAsync(["verify-proof", join(work, "tampered.json")]);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.out)).toMatchObject({ valid: false, reason: expect.stringMatching(/row/) });
    // Against another batch's root: refused.
    await writeFile(join(work, "latest.json"), JSON.stringify(live[0]));
    const otherRoot = m.expected.batches[0]!.roots[tree]!;
    if (otherRoot !== last.roots[tree])
      expect((await dacdAsync(["verify-proof", join(work, "latest.json"), "--root", otherRoot])).code).toBe(
        1,
      );

    // An id outside the tree: one line, exit 2; a tree with no on-chain escape: a usage error.
    const outside = await dacdAsync([
      "proof",
      ...cfg,
      tree,
      String(2n ** (tree === "vault" ? 31n : 64n)),
      "--format",
      "starkex",
    ]);
    expect(outside.code).toBe(2);
    expect(outside.err.trim().split("\n")).toHaveLength(1);
    expect(outside.err).toMatch(/outside the .* tree/);
    const order = await dacdAsync(["proof", ...cfg, "order", "1", "--format", "starkex"]);
    expect(order.code).toBe(64);
    expect(order.err).toMatch(/no on-chain escape/);
    expect((await dacdAsync(["proof", ...cfg, tree, "1", "--format", "solidity"])).code).toBe(64);

    // The API's errors, each naming the parameter at fault.
    const other = tree === "vault" ? "position" : "vault";
    for (const [path, status, parameter] of [
      [`/v1/escape/order/1`, 404, "tree"],
      [`/v1/escape/${other}/1`, 404, "tree"],
      [`/v1/escape/${tree}/${2n ** 64n}`, 400, "id"],
      [`/v1/escape/${tree}/1x`, 400, "id"],
      [`/v1/escape/${tree}/1?batch=x`, 400, "batch"],
      [`/v1/escape/${tree}/1?batch=99`, 404, "batch"],
      [`/v1/escape/${tree}/1?format=dacd`, 400, "format"],
    ] as const) {
      const a = await get(m.api + path);
      expect(a.status, path).toBe(status);
      expect(a.body, path).toMatchObject({ status, parameter });
    }

    // The same proofs from a stopped copy of the store, opened directly.
    await m.stop();
    const copy = join(work, "copy");
    await cp(m.config.dataDir, copy, { recursive: true, filter: (s) => !s.endsWith(CONTROL_SOCKET) });
    for (const [i, id] of ids.entries()) {
      const off = await dacdAsync(["proof", "--db", copy, tree, id, "--format", "starkex"]);
      expect(off.code).toBe(0);
      expect(JSON.parse(off.out)).toEqual(live[i]);
    }
  }, 240_000);
});
