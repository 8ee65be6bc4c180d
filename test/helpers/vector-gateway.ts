import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { recoverAddress } from "../../src/signer/eth-signer.js";
import type { Expected } from "./vectors.js";

/** One approve_new_roots call as the gateway received it. */
export interface Post {
  batch_id: number;
  claim_hash: string;
  signature: string;
  member_key: string;
}

/**
 * Return true from an interceptor when it answered (or broke) the request itself; the gateway then
 * does nothing more. Used to inject faults.
 */
export type Interceptor = (
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  body: string,
) => boolean | Promise<boolean>;

/**
 * A real local availability + feeder gateway serving a vector chain. It accepts a signature only
 * when it equals the chain's expected.json for that batch and recovers to the expected member,
 * so a member that signs anything else is caught.
 */
export class VectorGateway {
  readonly posts: Post[] = [];
  readonly accepted: Post[] = [];
  /** Batches served so far: get_batch_data answers `{"update": null}` from here on. */
  available: number;
  interceptor: Interceptor | undefined;
  blockchainType = "ETHEREUM";
  private server: Server | undefined;

  constructor(
    readonly responses: { update: unknown }[],
    readonly expected: Expected,
    readonly variant: "P" | "G",
  ) {
    this.available = responses.length;
  }

  get url(): string {
    const { port } = this.server!.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  async start(port = 0): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        void this.handle(req, res, Buffer.concat(chunks).toString("utf8")).catch((err: unknown) => {
          res.writeHead(500).end(String(err));
        });
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(port, "127.0.0.1", resolve));
    return this;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  /** Every batch id posted with more than one distinct claim (must stay empty). */
  conflictingClaims(): number[] {
    const claims = new Map<number, Set<string>>();
    for (const p of this.posts)
      (claims.get(p.batch_id) ?? claims.set(p.batch_id, new Set()).get(p.batch_id)!).add(p.claim_hash);
    return [...claims].filter(([, s]) => s.size > 1).map(([id]) => id);
  }

  acceptedIds(): number[] {
    return this.accepted.map((p) => p.batch_id);
  }

  private async handle(req: IncomingMessage, res: ServerResponse, body: string): Promise<void> {
    const url = new URL(req.url ?? "/", "http://gateway");
    if (this.interceptor && (await this.interceptor(req, res, url, body))) return;
    const feederPrefix = this.variant === "G" ? "/feeder_gateway/v2" : "/feeder_gateway";
    switch (url.pathname) {
      case "/availability_gateway/get_batch_data": {
        const id = Number(url.searchParams.get("batch_id"));
        const update = id >= 0 && id < this.available ? this.responses[id]!.update : null;
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ update }));
        return;
      }
      case "/availability_gateway/approve_new_roots":
        this.approve(res, body);
        return;
      case "/availability_gateway/get_blockchain_type":
        res.writeHead(200, { "content-type": "application/str" }).end(this.blockchainType);
        return;
      case `${feederPrefix}/get_last_batch_id`:
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(this.available - 1));
        return;
      default:
        res.writeHead(404).end("not found");
    }
  }

  private approve(res: ServerResponse, body: string): void {
    const post = JSON.parse(body) as Post;
    this.posts.push(post);
    const want = this.expected.batches.find((b) => b.batch_id === post.batch_id);
    const ok =
      want !== undefined &&
      post.claim_hash === want.claim_hash &&
      post.signature === want.signature &&
      post.member_key === this.expected.member_key &&
      recoverAddress(Buffer.from(post.claim_hash.slice(2), "hex"), post.signature) ===
        this.expected.member_key;
    if (!ok) {
      res.writeHead(400, { "content-type": "application/str" }).end("signature rejected");
      return;
    }
    this.accepted.push(post);
    res.writeHead(200, { "content-type": "application/str" }).end("signature accepted");
  }
}
