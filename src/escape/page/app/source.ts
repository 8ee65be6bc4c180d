import { KIT2_FORMAT } from "../../kit/v2/format.js";
import { httpFetchBytes, KitRefused, openKit, type EscapeKit, type FetchBytes } from "../../kit/v2/reader.js";

/**
 * Where the page's proofs come from, found by relative probes: a `manifest.json` beside the page is
 * an escape kit (format 2: read and checked by the kit's reader; format 1: one JSON file per
 * leaf), else `v1/escape/info` is a member's escape API. Opened from disk (`file://`) nothing can
 * be fetched: the user opens the kit's folder (or their proof file) instead.
 */

export const KIT_FORMAT = "dacd-escape-kit/1";

export interface ExitContracts {
  readonly exchange?: string | null;
  readonly verifier?: string | null;
}

export type ProofAnswer =
  { readonly found: true; readonly proof: unknown } | { readonly found: false; readonly message: string };

export interface Source {
  mode: "kit" | "api" | "file";
  tree: "vault" | "position" | null;
  batchId: number | null;
  root: string | null;
  contracts: ExitContracts;
  chainId: number | null;
  /** The batch the exchange froze at, where the kit's maker knew it. */
  frozenBatchId: number | null;
  describe: string;
  /** The proof of a leaf, or why there is none; null where the source cannot fetch (from disk). */
  fetchProof: ((id: string) => Promise<ProofAnswer>) | null;
  /** The ids of the vaults or positions of a stark key, where the source can tell. */
  findByKey: ((key: bigint) => Promise<string[]>) | null;
}

export async function getJson(url: string): Promise<{ status: number; json: unknown }> {
  // Revalidated each time: "Check again" must see the latest batch (the API lets it be cached 5 s).
  const res = await fetch(url, { headers: { accept: "application/json" }, cache: "no-cache" });
  const body = await res.text();
  try {
    return { status: res.status, json: JSON.parse(body) as unknown };
  } catch {
    return { status: res.status, json: null };
  }
}

function shardOf(id: string): string {
  return id.padStart(3, "0").slice(-3);
}

interface KitManifestFields {
  format?: string;
  tree?: "vault" | "position";
  batch_id?: number;
  root?: string;
  escape_contracts?: ExitContracts | null;
  exchange?: string | null;
  verifier?: string | null;
  chain_id?: number | null;
  frozen_batch_id?: number | null;
}

export function isKitManifest(json: unknown): json is KitManifestFields {
  const f = (json as KitManifestFields | null)?.format;
  return f === KIT_FORMAT || f === KIT2_FORMAT;
}

function kitFields(k: KitManifestFields, mode: Source["mode"]): Omit<Source, "fetchProof" | "findByKey"> {
  return {
    mode,
    tree: k.tree ?? null,
    batchId: k.batch_id ?? null,
    root: k.root ?? null,
    contracts: k.escape_contracts ?? { exchange: k.exchange ?? null, verifier: k.verifier ?? null },
    chainId: k.chain_id ?? null,
    frozenBatchId: k.frozen_batch_id ?? null,
    describe: `Proofs for batch ${k.batch_id}, from a published escape kit${mode === "file" ? " on your disk" : ""}.`,
  };
}

/** A format-1 kit's manifest (also one the user opened from disk, with no way to fetch). */
export function kitSource(k: KitManifestFields, fetchable: boolean): Source {
  const tree = k.tree;
  return {
    ...kitFields(k, fetchable ? "kit" : "file"),
    fetchProof:
      fetchable && tree
        ? async (id) => {
            const r = await getJson(`${tree}/${shardOf(id)}/${id}.json`);
            if (r.status === 200 && r.json) return { found: true, proof: r.json };
            if (r.status === 404) return { found: false, message: notInKit(tree, id) };
            return { found: false, message: `The proof could not be fetched (status ${r.status}).` };
          }
        : null,
    findByKey: null,
  };
}

const notInKit = (tree: string, id: string) =>
  `There is no ${tree} ${id} in this kit: it holds only ${tree}s with something in them. Check the number, or find it by your stark key.`;

/** A format-2 kit, read through `fetchBytes` (over HTTP, or from the folder the user opened). */
export async function kit2Source(fetchBytes: FetchBytes, mode: Source["mode"]): Promise<Source> {
  const kit: EscapeKit = await openKit(fetchBytes);
  const m = kit.manifest;
  const tree = m.leaf;
  return {
    ...kitFields({ ...m, tree, format: m.format }, mode),
    fetchProof: async (id) => {
      try {
        return { found: true, proof: await kit.proof(id) };
      } catch (e) {
        if (e instanceof KitRefused && e.reason === "not_found")
          return { found: false, message: notInKit(tree, id) };
        // A file that does not match the manifest, or a path that misses the root: refused, in words.
        return { found: false, message: `The kit refused it: ${(e as Error).message}` };
      }
    },
    findByKey: async (key) => (await kit.idsOfKey(key)).map((id) => id.toString()),
  };
}

/** A kit's folder the user opened (an input with webkitdirectory): its files by relative path. */
export function folderBytes(files: readonly File[]): FetchBytes {
  const byPath = new Map<string, File>();
  for (const f of files) {
    // "kit/shards/0.bin" -> "shards/0.bin": the path below the folder the user chose.
    const rel = (f.webkitRelativePath || f.name).split("/").slice(1).join("/") || f.name;
    byPath.set(rel, f);
  }
  return async (path) => {
    const f = byPath.get(path);
    if (!f) throw new Error(`${path} is not in the folder you opened`);
    return new Uint8Array(await f.arrayBuffer());
  };
}

export async function findSource(): Promise<Source> {
  // From disk the browser fetches nothing beside the page: the user opens their files instead.
  if (location.protocol === "file:") throw new Error("opened from disk");
  const m = await getJson("manifest.json");
  if (m.status === 200 && isKitManifest(m.json)) {
    if (m.json.format === KIT2_FORMAT) return kit2Source(httpFetchBytes(location.href), "kit");
    return kitSource(m.json, true);
  }
  const a = await getJson("v1/escape/info");
  if (a.status !== 200 || !a.json) throw new Error("no escape kit or escape API found beside this page");
  const i = a.json as {
    tree: "vault" | "position";
    batch_id: number;
    root: string;
    escape_contracts: ExitContracts | null;
    chain_id?: number | null;
    frozen_batch_id?: number | null;
  };
  return {
    mode: "api",
    tree: i.tree,
    batchId: i.batch_id,
    root: i.root,
    contracts: i.escape_contracts ?? {},
    chainId: i.chain_id ?? null,
    frozenBatchId: i.frozen_batch_id ?? null,
    describe: `Proofs for batch ${i.batch_id}, from a committee member's escape API.`,
    fetchProof: async (id) => {
      const r = await getJson(`v1/escape/${i.tree}/${id}`);
      if (r.status === 200 && r.json) return { found: true, proof: r.json };
      return {
        found: false,
        message:
          (r.json as { error?: string } | null)?.error ??
          `The proof could not be fetched (status ${r.status}).`,
      };
    },
    findByKey: idsOfKeyFromApi,
  };
}

/** The member's walk of the tree for a key's leaves (`GET /v1/escape/keys/{starkKey}`). */
async function idsOfKeyFromApi(key: bigint): Promise<string[]> {
  const r = await getJson(`v1/escape/keys/0x${key.toString(16)}`);
  const body = r.json as { leaves?: { id: string }[]; error?: string } | null;
  if (r.status !== 200 || !body?.leaves)
    throw new Error(body?.error ?? `the member could not search by key (status ${r.status})`);
  return body.leaves.map((l) => String(l.id));
}
