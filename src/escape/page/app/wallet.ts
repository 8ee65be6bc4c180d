/**
 * The user's wallet, through EIP-1193: found by EIP-6963's announcements (every installed wallet
 * answers), else `window.ethereum`. All chain reads of the page go through it, so the page needs
 * no server and no RPC endpoint of its own.
 */

export interface Eip1193 {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
}

export interface WalletInfo {
  readonly name: string;
  readonly rdns: string;
  readonly provider: Eip1193;
}

type Hex = `0x${string}`;

/** Every wallet that announces itself within `waitMs`, then window.ethereum if none did. */
export function findWallets(waitMs = 400): Promise<WalletInfo[]> {
  const found: WalletInfo[] = [];
  const onAnnounce = (ev: Event) => {
    const d = (ev as CustomEvent<{ info?: { name?: string; rdns?: string }; provider?: Eip1193 }>).detail;
    if (!d?.provider || found.some((w) => w.provider === d.provider)) return;
    found.push({ name: d.info?.name ?? "Wallet", rdns: d.info?.rdns ?? "", provider: d.provider });
  };
  window.addEventListener("eip6963:announceProvider", onAnnounce);
  window.dispatchEvent(new Event("eip6963:requestProvider"));
  return new Promise((resolve) =>
    setTimeout(() => {
      window.removeEventListener("eip6963:announceProvider", onAnnounce);
      const injected = (window as unknown as { ethereum?: Eip1193 }).ethereum;
      if (found.length === 0 && injected)
        found.push({ name: "Browser wallet", rdns: "", provider: injected });
      resolve(found);
    }, waitMs),
  );
}

export class Wallet {
  account: Hex | null = null;
  chainId: number | null = null;

  constructor(
    readonly info: WalletInfo,
    private readonly onChange: () => void,
  ) {
    const p = info.provider as Eip1193 & { on?: (ev: string, f: (x: unknown) => void) => void };
    p.on?.("accountsChanged", (a) => {
      this.account = ((a as string[])[0] as Hex | undefined) ?? null;
      onChange();
    });
    p.on?.("chainChanged", (c) => {
      this.chainId = Number(c);
      onChange();
    });
  }

  async connect(): Promise<void> {
    const accounts = (await this.info.provider.request({ method: "eth_requestAccounts" })) as string[];
    this.account = (accounts[0] as Hex | undefined) ?? null;
    this.chainId = Number(await this.info.provider.request({ method: "eth_chainId" }));
    this.onChange();
  }

  async switchChain(chainId: number): Promise<void> {
    await this.info.provider.request({
      method: "wallet_switchEthereumChain",
      params: [{ chainId: "0x" + chainId.toString(16) }],
    });
    this.chainId = Number(await this.info.provider.request({ method: "eth_chainId" }));
    this.onChange();
  }

  call = async (req: { to: Hex; data: Hex; from?: Hex }): Promise<Hex> =>
    (await this.info.provider.request({ method: "eth_call", params: [req, "latest"] })) as Hex;

  latestTime = async (): Promise<bigint> => {
    const block = (await this.info.provider.request({
      method: "eth_getBlockByNumber",
      params: ["latest", false],
    })) as { timestamp: Hex };
    return BigInt(block.timestamp);
  };

  /** Sends one transaction; resolves with its hash once the wallet has it. */
  async send(to: Hex, data: Hex): Promise<Hex> {
    if (!this.account) throw new Error("connect a wallet first");
    return (await this.info.provider.request({
      method: "eth_sendTransaction",
      params: [{ from: this.account, to, data, value: "0x0" }],
    })) as Hex;
  }

  /** Waits for the receipt; a reverted transaction is replayed as a call for its reason. */
  async receipt(hash: Hex): Promise<{ ok: boolean; gasUsed: bigint; blockNumber: Hex }> {
    for (;;) {
      const r = (await this.info.provider.request({
        method: "eth_getTransactionReceipt",
        params: [hash],
      })) as { status: Hex; gasUsed: Hex; blockNumber: Hex } | null;
      if (r) return { ok: Number(r.status) === 1, gasUsed: BigInt(r.gasUsed), blockNumber: r.blockNumber };
      await new Promise((res) => setTimeout(res, 1000));
    }
  }

  /** Runs the transaction as a call first: a revert shows its reason before any gas is paid. */
  async simulate(to: Hex, data: Hex, block: Hex | "latest" = "latest"): Promise<void> {
    await this.info.provider.request({
      method: "eth_call",
      params: [{ from: this.account ?? undefined, to, data }, block],
    });
  }
}
