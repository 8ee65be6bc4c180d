import { createServer, type IncomingMessage, type Server } from "node:http";

/**
 * A JSON-RPC proxy on 127.0.0.1 in front of a local Ethereum node that can fail on purpose:
 * `error` answers HTTP 503, `hang` holds each request until the mode changes (or 30 s), then
 * forwards it. It records every method called and each eth_getLogs range.
 */
export class RpcProxy {
  mode: "ok" | "error" | "hang" = "ok";
  readonly methods: string[] = [];
  readonly logRanges: { from: number; to: number }[] = [];
  private server: Server | undefined;
  url = "";

  constructor(private readonly target: string) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      void this.handle(req).then(
        ({ status, body }) => res.writeHead(status, { "content-type": "application/json" }).end(body),
        (err: unknown) => res.writeHead(502).end(String(err)),
      );
    });
    await new Promise<void>((r) => this.server!.listen(0, "127.0.0.1", r));
    const { port } = this.server.address() as { port: number };
    this.url = `http://127.0.0.1:${port}`;
    return this;
  }

  count(method: string): number {
    return this.methods.filter((m) => m === method).length;
  }

  async close(): Promise<void> {
    this.mode = "ok";
    this.server?.closeAllConnections();
    await new Promise<void>((r) => this.server?.close(() => r()) ?? r());
  }

  private async handle(req: IncomingMessage): Promise<{ status: number; body: string }> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const calls = ([] as { method: string; params?: unknown[] }[]).concat(JSON.parse(body));
    for (const call of calls) {
      this.methods.push(call.method);
      if (call.method === "eth_getLogs") {
        const p = call.params?.[0] as { fromBlock: string; toBlock: string };
        this.logRanges.push({ from: Number(p.fromBlock), to: Number(p.toBlock) });
      }
    }
    if (this.mode === "error") return { status: 503, body: '{"error":"injected"}' };
    if (this.mode === "hang") {
      const until = Date.now() + 30_000;
      while (this.mode === "hang" && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    }
    const res = await fetch(this.target, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    return { status: res.status, body: await res.text() };
  }
}

/** Calls `method` on the node directly (mining, snapshots). */
export async function rpc(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const answer = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (answer.error) throw new Error(`${method}: ${answer.error.message}`);
  return answer.result;
}
