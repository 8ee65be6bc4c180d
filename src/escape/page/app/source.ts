export interface ExitContracts {
  readonly exchange?: string | null;
  readonly verifier?: string | null;
}

/**
 * Where the page's proofs come from, found by relative probes: a `manifest.json` beside the page is
 * an escape kit (static files in the kit's layout), else `v1/escape/info` is a member's escape API.
 * Opened from disk (`file://`) neither can be fetched: the user opens their proof file instead.
 */

export const KIT_FORMAT = "dacd-escape-kit/1";

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
  proofUrl: ((id: string) => string) | null;
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
  chain_id?: number | null;
  frozen_batch_id?: number | null;
}

/** A kit's manifest as a source (also when the user opened manifest.json from disk). */
export function kitSource(k: KitManifestFields, fetchable: boolean): Source {
  const tree = k.tree ?? null;
  return {
    mode: fetchable ? "kit" : "file",
    tree,
    batchId: k.batch_id ?? null,
    root: k.root ?? null,
    contracts: k.escape_contracts ?? {},
    chainId: k.chain_id ?? null,
    frozenBatchId: k.frozen_batch_id ?? null,
    describe: `Proofs for batch ${k.batch_id}, from a published escape kit.`,
    proofUrl: fetchable && tree ? (id) => `${tree}/${shardOf(id)}/${id}.json` : null,
    findByKey: null,
  };
}

export function isKitManifest(json: unknown): json is KitManifestFields {
  return !!json && typeof json === "object" && (json as KitManifestFields).format === KIT_FORMAT;
}

export async function findSource(): Promise<Source> {
  // From disk the browser fetches nothing beside the page: the user opens their files instead.
  if (location.protocol === "file:") throw new Error("opened from disk");
  const m = await getJson("manifest.json");
  if (m.status === 200 && isKitManifest(m.json)) return kitSource(m.json, true);
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
    proofUrl: (id) => `v1/escape/${i.tree}/${id}`,
    findByKey: (key) => idsOfKeyFromDump(i.tree, key),
  };
}

/** The API's dump of the tree, read line by line for the key's leaves (vault CSV, position JSON lines). */
async function idsOfKeyFromDump(tree: "vault" | "position", key: bigint): Promise<string[]> {
  const res = await fetch(`v1/dump/${tree}`);
  if (!res.ok || !res.body)
    throw new Error(`the member's dump of the ${tree}s could not be read (status ${res.status})`);
  const ids: string[] = [];
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let rest = "";
  const consider = (line: string) => {
    if (!line) return;
    if (tree === "vault") {
      const [id, k] = line.split(",");
      if (id && k && /^[0-9]+$/.test(id) && safeBig(k) === key) ids.push(id);
    } else if (line.startsWith("{")) {
      const p = JSON.parse(line) as { position_id?: string; public_key?: string };
      if (p.position_id && p.public_key && safeBig(p.public_key) === key) ids.push(p.position_id);
    }
  };
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const lines = (rest + value).split("\n");
    rest = lines.pop() ?? "";
    lines.forEach(consider);
  }
  consider(rest);
  return ids;
}

/** The dump's keys are 0x hex. */
function safeBig(text: string): bigint | null {
  try {
    return BigInt(text.trim());
  } catch {
    return null;
  }
}
