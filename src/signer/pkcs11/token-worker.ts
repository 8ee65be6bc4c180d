/**
 * The worker thread of pkcs11-signer.ts: holds the one token session and runs its synchronous
 * PKCS#11 calls, so that a token that hangs blocks this thread, never the daemon's event loop.
 */
import { parentPort } from "node:worker_threads";
import { dacdErrorData, DacdError } from "../../errors.js";
import { TokenSession } from "./token.js";
import type { TokenRequest, TokenReply } from "./token-protocol.js";

const port = parentPort;
if (!port) throw new Error("token-worker runs as a worker thread");

let session: TokenSession | undefined;

function drop(): void {
  session?.close();
  session = undefined;
}

function handle(req: TokenRequest): TokenReply {
  try {
    switch (req.op) {
      case "open": {
        drop();
        session = TokenSession.open(req.spec, { findKey: true });
        const key = session.key!;
        return { id: req.id, point: key.point, address: key.address };
      }
      case "sign": {
        if (!session) throw new DacdError("SIGNER", "PKCS#11 token: no open session");
        try {
          return { id: req.id, raw: session.sign(req.hash) };
        } catch (err) {
          // A failed call may have left the session unusable (token removed, session closed):
          // the next open starts afresh.
          drop();
          throw err;
        }
      }
      case "close":
        drop();
        return { id: req.id };
    }
  } catch (err) {
    const e = err instanceof DacdError ? err : new DacdError("SIGNER", `PKCS#11 token: ${String(err)}`);
    return { id: req.id, error: dacdErrorData(e) };
  }
}

port.on("message", (req: TokenRequest) => port.postMessage(handle(req)));
