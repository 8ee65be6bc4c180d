import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { performance } from "node:perf_hooks";

/**
 * The catch-up bench's gateway, in a process of its own (forked by catchup.ts) so that serving the
 * answers costs the member's event loop nothing: an availability and feeder gateway (variant G)
 * serving prepared `get_batch_data` answers from `DIR/<id>.json` for batch ids 1…N. It accepts a
 * signature only with the claim hash the preparation computed for that batch (`DIR/claims.json`).
 *
 * argv: DIR N [FIRST]: batches FIRST … FIRST + N − 1 (FIRST defaults to 1). IPC: sends `{ port }`
 * once listening; on `{ open: true }` the feeder announces every batch, on `{ release: ID }` the
 * batches up to ID (until then the last batch id is FIRST − 1, the loaded state); sends `{ accepted:
 * [ID, AT] }` as each batch is first accepted (the escape-kit bench's member beside a kit), and
 * once every batch is accepted `{ done }` with the times (ms since the epoch, this process's clock)
 * of the first get_batch_data, of each acceptance, and every claim posted per batch id.
 */
const [dir, countArg, firstArg] = process.argv.slice(2);
const count = Number(countArg);
const firstId = Number(firstArg ?? 1);
const bodies = new Map(
  Array.from({ length: count }, (_, i) => [firstId + i, readFileSync(join(dir!, `${firstId + i}.json`))]),
);
const claims = JSON.parse(readFileSync(join(dir!, "claims.json"), "utf8")) as Record<string, string>;
const now = (): number => performance.timeOrigin + performance.now();

let last = firstId - 1;
let firstFetchAt: number | undefined;
const fetchedAt: [number, number][] = [];
const acceptedAt = new Map<number, number>();
const posted = new Map<number, string[]>();

const server = createServer((req, res) => {
  const url = new URL(req.url ?? "/", "http://gateway");
  const send = (status: number, body: Buffer | string, type = "application/json"): void => {
    const buf = typeof body === "string" ? Buffer.from(body) : body;
    res.writeHead(status, { "content-type": type, "content-length": buf.length }).end(buf);
  };
  switch (url.pathname) {
    case "/feeder_gateway/v2/get_last_batch_id":
      return send(200, String(last));
    case "/availability_gateway/get_blockchain_type":
      return send(200, "ETHEREUM", "application/str");
    case "/availability_gateway/get_batch_data": {
      const id = Number(url.searchParams.get("batch_id"));
      if (!(id >= firstId && id <= last)) return send(200, '{"update": null}');
      firstFetchAt ??= now();
      fetchedAt.push([id, now()]);
      return send(200, bodies.get(id)!);
    }
    case "/availability_gateway/approve_new_roots": {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const post = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
          batch_id: number;
          claim_hash: string;
        };
        (posted.get(post.batch_id) ?? posted.set(post.batch_id, []).get(post.batch_id)!).push(
          post.claim_hash,
        );
        if (claims[post.batch_id] !== post.claim_hash)
          return send(400, "signature rejected", "application/str");
        if (!acceptedAt.has(post.batch_id)) {
          acceptedAt.set(post.batch_id, now());
          process.send!({ accepted: [post.batch_id, acceptedAt.get(post.batch_id)] });
        }
        send(200, "signature accepted", "application/str");
        if (acceptedAt.size === count) {
          process.send!({
            done: {
              firstFetchAt,
              acceptedAt: [...acceptedAt],
              fetchedAt,
              posted: [...posted],
            },
          });
        }
      });
      return;
    }
    default:
      send(404, "not found", "text/plain");
  }
});
server.listen(0, "127.0.0.1", () => process.send!({ port: (server.address() as AddressInfo).port }));
process.on("message", (m: { open?: boolean; release?: number }) => {
  if (m.open) last = firstId + count - 1;
  if (m.release !== undefined) last = Math.min(m.release, firstId + count - 1);
});
process.on("disconnect", () => process.exit(0));
