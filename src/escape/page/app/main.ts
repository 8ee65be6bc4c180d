import { decodeAbiParameters, keccak256, toHex, type Hex } from "viem";
import { exitPlan, type ExitPlan, type ExitProof, type ExitStep } from "../../exit/plan.js";
import { readExitState } from "../../exit/chain-state.js";
import {
  chainView,
  inUnits,
  rawInUnits,
  tokenSymbol,
  type ChainView,
  type StepStatus,
} from "../chain-reads.js";
import { revertInWords } from "../revert.js";
import { safeBatch } from "../safe-batch.js";
import { $, clear, copyButton, download, hexValue, make } from "./dom.js";
import { findSource, folderBytes, isKitManifest, kit2Source, kitSource, type Source } from "./source.js";
import { findWallets, Wallet, type WalletInfo } from "./wallet.js";

/**
 * The escape page: a user of a frozen (or failing) exchange finds their vault or position, sees
 * each step out in order and where they stand (read through their wallet), and sends each step
 * from the wallet; the call data stays on the page for any other wallet, with the proof file and a
 * Safe Transaction Builder batch to download.
 */

type PageProof = ExitProof;

const SPOT = "starkex-escape-spot/1";
const PERPETUAL = "starkex-escape-perpetual/1";

interface PageState {
  source: Source | null;
  proof: PageProof | null;
  plan: ExitPlan | null;
  wallets: WalletInfo[];
  wallet: Wallet | null;
  view: ChainView | null;
  /** Per step: what its last transaction did, in words. */
  tx: Record<string, { text: string; cls: string; hash?: string }>;
  /** The id last fetched, fetched again by "Check again" (the source's latest batch may have moved). */
  lastId: string | null;
}

const state: PageState = {
  source: null,
  proof: null,
  plan: null,
  wallets: [],
  wallet: null,
  view: null,
  tx: {},
  lastId: null,
};

const TITLES: Record<string, string> = {
  register: "Link your Ethereum address to your key",
  request: "Ask for your money (forced withdrawal request)",
  freeze: "Freeze the exchange",
  verify_escape: "Prove your balance to the escape verifier",
  escape: "Claim your balance on the exchange",
  withdraw: "Withdraw to your Ethereum address",
};

function what(step: ExitStep, spot: boolean): string {
  switch (step.step) {
    case "register":
      return "The exchange pays only an Ethereum address registered to your stark key. Registering needs a signature made with your stark private key (the exchange's own app or key export), which this page cannot make.";
    case "request":
      return "Sent from the Ethereum address registered to your key. The operator must serve it within the grace period; if it does not, anyone may freeze the exchange. If it does, your money arrives the normal way and you are done.";
    case "freeze":
      return "Possible once the grace period after your request has passed and the request was not served. Anyone may send it. After the freeze no one can change the balances: everyone leaves with the proof of the frozen state.";
    case "verify_escape":
      return spot
        ? "Checks your proof (the Merkle path of your vault) against the frozen root and records it. About 1.05M gas. Anyone may send it."
        : "Checks your position against the frozen shared state and records what it may withdraw. About 2.2 to 2.4M gas. Anyone may send it.";
    case "escape":
      return (
        "Checks that record against the exchange's frozen state and credits your balance to your key (once per " +
        (spot ? "vault" : "position") +
        ")."
      );
    case "withdraw":
      return "Pays the credited balance to the Ethereum address registered to your key.";
  }
}

function status(s: string, isError = false): void {
  const el = $("status");
  el.textContent = s;
  el.className = isError ? "error" : "";
}

function contracts(): { exchange: Hex | null; verifier: Hex | null } {
  const v = (id: string) => {
    const t = ($(id) as HTMLInputElement).value.trim();
    return /^0x[0-9a-fA-F]{40}$/.test(t) ? (t as Hex) : null;
  };
  return { exchange: v("exchange"), verifier: v("verifier") };
}

function expectedChain(): number | null {
  const t = ($("chain-id") as HTMLInputElement).value.trim();
  return /^[1-9][0-9]{0,15}$/.test(t) ? Number(t) : null;
}

function row(dl: HTMLElement, name: string, value: string | HTMLElement, hex = false): void {
  dl.appendChild(make("dt", name));
  const dd = make("dd");
  if (typeof value !== "string") dd.appendChild(value);
  else if (hex) dd.appendChild(hexValue(value));
  else dd.textContent = value;
  dl.appendChild(dd);
}

function date(s: bigint): string {
  return new Date(Number(s) * 1000).toUTCString();
}

function duration(s: bigint): string {
  const d = Number(s);
  const unit = (n: number, name: string) => `${+n.toFixed(1)} ${name}${+n.toFixed(1) === 1 ? "" : "s"}`;
  if (d >= 86400) return unit(d / 86400, "day");
  if (d >= 3600) return unit(d / 3600, "hour");
  return unit(d, "second");
}

// ---------- wallet ----------

function renderWallet(): void {
  const bar = clear($("wallet"));
  const w = state.wallet;
  if (!w) {
    if (state.wallets.length === 0) {
      bar.appendChild(
        make(
          "p",
          "No wallet found in this browser. You can still copy each step's call data below into any wallet, or download the steps for a Safe.",
          "muted",
        ),
      );
      return;
    }
    for (const info of state.wallets) {
      const b = make("button", `Connect ${info.name}`);
      b.type = "button";
      b.dataset.wallet = info.rdns || info.name;
      b.addEventListener("click", () => void connect(info));
      bar.appendChild(b);
    }
    return;
  }
  const p = make("p");
  p.appendChild(document.createTextNode(`${w.info.name}: `));
  p.appendChild(make("code", w.account ?? "no account", "hex"));
  p.appendChild(document.createTextNode(`, chain ${w.chainId ?? "?"}`));
  bar.appendChild(p);
  const want = expectedChain();
  if (want !== null && w.chainId !== want) {
    const warn = make(
      "p",
      `Your wallet is on chain ${w.chainId}; this exchange is on chain ${want}. `,
      "bad",
    );
    const b = make("button", `Switch to chain ${want}`);
    b.type = "button";
    b.id = "switch-chain";
    b.addEventListener("click", () =>
      w
        .switchChain(want)
        .then(refresh, (e: Error) => status(`The wallet did not switch: ${e.message}`, true)),
    );
    warn.appendChild(b);
    bar.appendChild(warn);
  }
  document.body.setAttribute("data-wallet", w.account ? "connected" : "none");
}

async function connect(info: WalletInfo): Promise<void> {
  const w = new Wallet(info, () => void refresh());
  try {
    await w.connect();
    state.wallet = w;
  } catch (e) {
    status(`The wallet refused: ${(e as Error).message}`, true);
  }
  await refresh();
}

function walletReady(): boolean {
  const w = state.wallet;
  const want = expectedChain();
  return !!w?.account && (want === null || w.chainId === want);
}

// ---------- the proof and its steps ----------

async function refresh(): Promise<void> {
  renderWallet();
  if (!state.proof) return;
  const { exchange, verifier } = contracts();
  const plan = exitPlan(state.proof, {
    chainId: expectedChain(),
    exchange,
    verifier,
    frozenBatchId: state.source?.frozenBatchId ?? null,
  });
  state.plan = plan;
  state.view = null;
  const w = state.wallet;
  if (walletReady() && w) {
    try {
      const now = await w.latestTime().catch(() => null);
      const withState = await readExitState(w.call, plan, {
        ...(w.account ? { from: w.account } : {}),
        ...(now !== null ? { now } : {}),
      });
      const token = withState.chain.asset?.token;
      state.plan = withState;
      state.view = chainView(withState, now, token ? await tokenSymbol(w.call, token) : null);
    } catch (e) {
      status(`Reading the exchange through the wallet failed: ${(e as Error).message}`, true);
    }
  }
  renderProof();
}

function batchWarning(plan: ExitPlan): string | null {
  if (plan.at_frozen_batch === false)
    return `This proof is for batch ${plan.batch_id ?? "?"}, not the state the exchange froze at (batch ${plan.frozen_batch_id}): verifyEscape or escape with it will fail. Use the proof of the frozen batch.`;
  return null;
}

function renderProof(): void {
  const proof = state.proof!;
  const plan = state.plan!;
  const spot = proof.format === SPOT;
  const v = state.view;
  $("result").hidden = false;
  $("leaf-title").textContent = `${spot ? "Vault" : "Position"} ${plan.id}${plan.empty ? " (empty)" : ""}`;
  const warning = batchWarning(plan);
  const next = plan.steps.find((s) => v?.status[s.step] === "next" || v?.status[s.step] === "waiting");
  const allDone = v !== null && plan.steps.length > 0 && plan.steps.every((s) => v.status[s.step] === "done");
  $("where").hidden = !next && !allDone;
  $("where").textContent = allDone
    ? "Every step is done: the balance has been paid to your Ethereum address."
    : next
      ? `Where you stand: step ${plan.steps.indexOf(next) + 1} of ${plan.steps.length}, ${TITLES[next.step]?.toLowerCase()}${v?.status[next.step] === "waiting" && v.freezeAt ? ` (possible from ${date(v.freezeAt)})` : ""}.`
      : "";
  const warn = $("batch-warning");
  warn.hidden = warning === null;
  warn.textContent = warning ?? "";
  const dl = clear($("leaf"));
  if (proof.format === SPOT) {
    row(dl, "Stark key", proof.stark_key, true);
    row(dl, "Asset id", proof.asset_id, true);
    const q = BigInt(proof.quantized_amount);
    row(
      dl,
      "Balance",
      v?.asset
        ? `${inUnits(q, v.asset)} (${q} quantized, quantum ${v.asset.quantum})`
        : `${q} (quantized: connect a wallet to see it in the asset's units)`,
    );
  } else {
    row(dl, "Public key", proof.public_key, true);
    row(dl, "Collateral balance", `${proof.collateral_balance} (quantized)`);
    proof.assets.forEach((a, i) => {
      const box = make("span", undefined, "asset");
      box.appendChild(hexValue(a.asset_id));
      box.appendChild(make("span", `balance ${a.balance}, funding index ${a.cached_funding_index}`));
      row(dl, `Asset ${i + 1}`, box);
    });
    if (proof.withdrawal_amount !== undefined)
      row(
        dl,
        "You may withdraw",
        v?.asset
          ? `${inUnits(BigInt(proof.withdrawal_amount), v.asset)} (${proof.withdrawal_amount} quantized)`
          : `${proof.withdrawal_amount} (quantized collateral)`,
      );
  }
  row(dl, "Batch", String(proof.batch_id ?? "?"));
  if (v) {
    row(
      dl,
      "Exchange frozen",
      v.frozen === null ? "unknown (the contract did not answer)" : v.frozen ? "yes" : "no",
    );
    if (v.gracePeriodS !== null) row(dl, "Grace period", duration(v.gracePeriodS));
    if (v.requestTime) row(dl, "Your request", `sent ${date(v.requestTime)}`);
    if (v.freezeAt !== null && !v.frozen) row(dl, "Freeze possible from", date(v.freezeAt));
    if (v.withdrawable !== null && v.withdrawable > 0n)
      row(dl, "Ready to withdraw", v.asset ? rawInUnits(v.withdrawable, v.asset) : `${v.withdrawable}`);
  }
  renderRootCheck(proof, spot);
  renderSteps(plan, spot);
  document.body.dataset.shown = `${plan.object}-${plan.id}-${v ? "chain" : "plain"}`;
}

function renderRootCheck(proof: PageProof, spot: boolean): void {
  const check = clear($("root-check"));
  const root = proof.format === SPOT ? proof.vault_root : proof.position_root;
  check.appendChild(document.createTextNode("The proof's root: "));
  check.appendChild(hexValue(root));
  const src = state.source;
  if (src?.root) {
    check.appendChild(document.createTextNode(` Root of the source's batch ${src.batchId}: `));
    check.appendChild(hexValue(src.root));
    const same = root.toLowerCase() === src.root.toLowerCase();
    check.appendChild(
      make(
        "span",
        same ? " They match." : " They differ: this proof is for another batch.",
        same ? "ok" : "bad",
      ),
    );
  }
  check.appendChild(
    document.createTextNode(
      ` The escape succeeds only if it equals the exchange's frozen root (${spot ? "getValidiumVaultRoot()" : "the position root of its shared state"}).`,
    ),
  );
}

const BADGES: Record<StepStatus, string> = { done: "Done", next: "Next", waiting: "Waiting", later: "Later" };

function renderSteps(plan: ExitPlan, spot: boolean): void {
  const ol = clear($("steps"));
  const none = plan.steps.length === 0;
  $("steps-none").hidden = !none;
  $("steps-none").textContent =
    plan.message ?? "There is nothing to withdraw here, so there is no transaction to send.";
  $("steps-title").hidden = none;
  $("downloads").hidden = none;
  const notes = clear($("plan-notes"));
  // The plan's notes on unknown addresses are for developers: the page asks for them above.
  for (const n of plan.notes) if (!n.includes("`to`")) notes.appendChild(make("li", n));
  if (none) return;
  const v = state.view;
  for (const step of plan.steps) {
    const st: StepStatus | undefined = v?.status[step.step];
    const li = make("li", undefined, `step${st ? " s-" + st : ""}`);
    li.dataset.step = step.step;
    if (st) li.dataset.status = st;
    const head = make("div", undefined, "step-head");
    if (st) head.appendChild(make("span", BADGES[st], `badge b-${st}`));
    head.appendChild(make("h3", TITLES[step.step] ?? step.step));
    li.appendChild(head);
    li.appendChild(make("p", what(step, spot)));
    if (st === "waiting" && v?.freezeAt)
      li.appendChild(make("p", `Possible from ${date(v.freezeAt)}.`, "note"));
    // Why the chain would refuse it now (from the simulation), when that is not just waiting its turn.
    if (st === "next" && step.state?.status === "blocked" && step.state.reason)
      li.appendChild(make("p", step.state.reason, "bad"));
    if (step.note) li.appendChild(make("p", step.note, "muted"));
    li.appendChild(
      make(
        "p",
        step.sender === "owner"
          ? "Sent from: the Ethereum address registered to your key."
          : "Sent from: any Ethereum address (it pays the gas).",
        "muted",
      ),
    );
    const to = make("p", undefined, "to");
    to.appendChild(
      document.createTextNode(`${step.contract === "verifier" ? "Escape verifier" : "Exchange"}: `),
    );
    if (step.to) to.appendChild(hexValue(step.to));
    else to.appendChild(make("span", "enter its address above", "bad"));
    to.appendChild(make("span", ` ${step.function}`, "fn"));
    li.appendChild(to);
    if (step.data) {
      const area = make("textarea");
      area.readOnly = true;
      area.value = step.data;
      area.setAttribute("aria-label", `${step.step} call data`);
      area.dataset.call = step.step;
      li.appendChild(area);
      const actions = make("div", undefined, "actions");
      actions.appendChild(copyButton(() => area.value, "Copy call data", area));
      if (state.wallet && step.to) {
        const send = make(
          "button",
          st === "done" ? "Send again" : `Send with ${state.wallet.info.name}`,
          "send",
        );
        send.type = "button";
        send.dataset.send = step.step;
        // A done step may be sent again: the check before sending shows why it would fail.
        send.disabled = !walletReady() || st === "waiting";
        send.addEventListener("click", () => void sendStep(step));
        actions.appendChild(send);
      }
      li.appendChild(actions);
    }
    const tx = state.tx[step.step];
    const out = make("p", tx?.text ?? "", `tx ${tx?.cls ?? ""}`);
    out.dataset.tx = step.step;
    out.setAttribute("role", "status");
    li.appendChild(out);
    ol.appendChild(li);
  }
}

async function sendStep(step: ExitStep): Promise<void> {
  const w = state.wallet!;
  const set = (text: string, cls = "", hash?: string) => {
    state.tx[step.step] = { text, cls, hash };
    const el = document.querySelector<HTMLElement>(`[data-tx="${step.step}"]`);
    if (el) {
      el.textContent = text;
      el.className = `tx ${cls}`;
    }
  };
  try {
    set("Checking it with the exchange first…");
    await w.simulate(step.to!, step.data!);
  } catch (e) {
    set(`It would fail, so it was not sent: ${revertInWords(e)}`, "bad");
    return;
  }
  let hash: Hex;
  try {
    set("Confirm it in your wallet…");
    hash = await w.send(step.to!, step.data!);
  } catch (e) {
    set(`Not sent: ${revertInWords(e)}`, "bad");
    return;
  }
  set(`Sent: ${hash}. Waiting for it to be mined…`, "", hash);
  const r = await w.receipt(hash);
  if (r.ok) {
    set(`Done: ${hash}, mined in block ${Number(r.blockNumber)}, gas used ${r.gasUsed}.`, "ok", hash);
  } else {
    let reason = "no reason given";
    try {
      await w.simulate(step.to!, step.data!, r.blockNumber);
    } catch (e) {
      reason = revertInWords(e);
    }
    set(`Failed: ${hash} reverted (${reason}).`, "bad", hash);
  }
  await refresh();
}

// ---------- finding a vault or position ----------

function showProof(json: unknown): void {
  const p = json as PageProof;
  if (p?.format !== SPOT && p?.format !== PERPETUAL) {
    status(
      "This file is not an escape proof (a vault's or position's proof from the kit or dacd proof --format starkex).",
      true,
    );
    return;
  }
  const same =
    state.proof?.format === p.format && state.plan?.id === (p.format === SPOT ? p.vault_id : p.position_id);
  state.proof = p;
  if (!same) state.tx = {};
  status("");
  void refresh();
}

async function lookupId(id: string): Promise<void> {
  const src = state.source;
  if (!src?.fetchProof) {
    status("This page cannot fetch proofs here: open the kit's folder or your proof file below.", true);
    return;
  }
  status(`Fetching the proof of ${src.tree} ${id}…`);
  state.lastId = id;
  const r = await src.fetchProof(id);
  if (r.found) return showProof(r.proof);
  status(r.message, true);
}

/** The stark key registered to an Ethereum address, from the exchange's LogUserRegistered events. */
async function keyOfAddress(address: string): Promise<bigint | null> {
  const w = state.wallet;
  const { exchange } = contracts();
  if (!w || !exchange)
    throw new Error("connect a wallet and give the exchange's address to look up an Ethereum address");
  const topic = keccak256(toHex("LogUserRegistered(address,uint256,address)"));
  const logs = (await w.info.provider.request({
    method: "eth_getLogs",
    params: [{ address: exchange, topics: [topic], fromBlock: "0x0", toBlock: "latest" }],
  })) as { data: Hex }[];
  for (const log of logs.reverse()) {
    const [eth, key] = decodeAbiParameters(
      [{ type: "address" }, { type: "uint256" }, { type: "address" }],
      log.data,
    );
    if (eth.toLowerCase() === address.toLowerCase()) return key;
  }
  return null;
}

async function lookup(ev: Event): Promise<void> {
  ev.preventDefault();
  const text = ($("leaf-id") as HTMLInputElement).value.trim();
  clear($("matches"));
  $("result").hidden = true;
  try {
    if (/^(0|[1-9][0-9]{0,19})$/.test(text)) return await lookupId(text);
    let key: bigint | null = null;
    if (/^0x[0-9a-fA-F]{40}$/.test(text)) {
      status("Looking up the stark key registered to this address…");
      key = await keyOfAddress(text);
      if (key === null)
        return status("No stark key is registered to this Ethereum address on the exchange.", true);
    } else if (/^0x[0-9a-fA-F]{1,64}$/.test(text) || /^[0-9]{21,78}$/.test(text)) key = BigInt(text);
    else
      return status(
        "Enter your vault id (a whole number, like 12345), your stark key (0x…) or your Ethereum address.",
        true,
      );
    const src = state.source;
    if (!src?.findByKey)
      return status(
        "This kit cannot search by key: enter your vault or position id (the exchange's app shows it).",
        true,
      );
    status("Searching for your key…");
    const ids = await src.findByKey(key);
    if (ids.length === 0) return status(`No ${src.tree} with something in it belongs to this key.`, true);
    if (ids.length === 1) return await lookupId(ids[0]!);
    status(`This key has ${ids.length} ${src.tree}s; choose one:`);
    const list = $("matches");
    for (const id of ids) {
      const b = make("button", `${src.tree} ${id}`, "match");
      b.type = "button";
      b.addEventListener("click", () => void lookupId(id));
      list.appendChild(b);
    }
  } catch (e) {
    status(`The lookup failed: ${(e as Error).message}`, true);
  }
}

/** Proof or manifest files the user opens (a kit opened from disk cannot fetch its own files). */
async function openFiles(): Promise<void> {
  const input = $("proof-file") as HTMLInputElement;
  let proof: unknown = null;
  for (const f of Array.from(input.files ?? [])) {
    let json: unknown;
    try {
      json = JSON.parse(await f.text());
    } catch {
      status(`${f.name} is not a JSON file.`, true);
      return;
    }
    if (isKitManifest(json)) useSource(kitSource(json, false));
    else proof = json;
  }
  if (proof) showProof(proof);
}

/** The kit's folder, opened from disk: read (and checked) by the kit's reader as over HTTP. */
async function openFolder(): Promise<void> {
  const files = Array.from(($("kit-folder") as HTMLInputElement).files ?? []);
  try {
    useSource(await kit2Source(folderBytes(files), "file"));
    status(`The kit is open: enter your ${state.source?.tree} id or stark key above.`);
    document.body.setAttribute("data-ready", "folder");
  } catch (e) {
    status(`This folder is not an escape kit (format 2): ${(e as Error).message}`, true);
  }
}

function useSource(src: Source): void {
  state.source = src;
  $("source").textContent = src.describe;
  $("leaf-label").textContent =
    `Your ${src.tree === "position" ? "position" : "vault"} id, stark key or Ethereum address`;
  const fill = (id: string, v: string | number | null | undefined) => {
    const el = $(id) as HTMLInputElement;
    if (v !== null && v !== undefined && !el.value) el.value = String(v);
  };
  fill("exchange", src.contracts.exchange);
  fill("verifier", src.contracts.verifier);
  fill("chain-id", src.chainId);
  contractsNote();
}

function contractsNote(): void {
  const { exchange, verifier } = contracts();
  const note = $("contracts-note");
  note.textContent =
    exchange && verifier
      ? ""
      : "Enter the exchange's and the escape verifier's contract addresses: the exchange's website or a block explorer shows them (the verifier's is in the exchange contract's escape settings). The call data below is the same for every wallet.";
  $("contracts").toggleAttribute("open", !(exchange && verifier));
}

function downloadProof(): void {
  const p = state.plan;
  if (state.proof && p)
    download(`${p.object}-${p.id}-proof.json`, JSON.stringify(state.proof, null, 2) + "\n");
}

function downloadSafe(): void {
  const p = state.plan;
  if (p)
    download(`${p.object}-${p.id}-safe-batch.json`, JSON.stringify(safeBatch(p, Date.now()), null, 2) + "\n");
}

document.addEventListener("DOMContentLoaded", () => {
  $("lookup").addEventListener("submit", (ev) => void lookup(ev));
  $("proof-file").addEventListener("change", () => void openFiles());
  $("kit-folder").addEventListener("change", () => void openFolder());
  $("download-proof").addEventListener("click", downloadProof);
  $("download-safe").addEventListener("click", downloadSafe);
  $("recheck").addEventListener("click", () => {
    if (state.lastId && state.source?.fetchProof) void lookupId(state.lastId);
    else void refresh();
  });
  for (const id of ["exchange", "verifier", "chain-id"])
    $(id).addEventListener("change", () => {
      contractsNote();
      void refresh();
    });
  void findWallets().then((w) => {
    state.wallets = w;
    renderWallet();
  });
  findSource().then(
    (src) => {
      useSource(src);
      document.body.setAttribute("data-ready", src.mode);
    },
    (e: Error) => {
      const fromDisk = location.protocol === "file:";
      $("source").textContent = fromDisk
        ? "This page was opened from your disk, so it cannot read the kit's files by itself: open the kit's folder below (or your proof file)."
        : `${e.message}. Open the kit's folder or your proof file below.`;
      $("open-file").setAttribute("open", "");
      contractsNote();
      document.body.setAttribute("data-ready", "none");
    },
  );
});
