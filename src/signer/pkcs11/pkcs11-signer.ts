/**
 * The member signer whose key stays in a PKCS#11 token. The token's calls run in a worker thread
 * (token-worker.ts), each with a time limit: a hung token is abandoned with its worker, never
 * waited on by the event loop. A failing call leaves the claim unsigned (a SIGNER error, which
 * the run loop retries with back-off); the session is then reopened, itself with back-off, and
 * must still hold the same key before anything is signed with it.
 */
import { Worker } from "node:worker_threads";
import { workerScript } from "../../util/worker-script.js";
import { DacdError, reviveDacdError } from "../../errors.js";
import { recoverAddress } from "../eth-signer.js";
import type { Signer } from "../signer.js";
import { postedSignature } from "./ec-key.js";
import type { TokenCall, TokenReply, TokenRequest } from "./token-protocol.js";
import type { TokenSpec } from "./token.js";

export interface Pkcs11SignerOptions {
  readonly spec: TokenSpec;
  /** Longest a token call may take before the session is given up (default 10 s). */
  readonly callTimeoutMs?: number;
  /** Every failed token call (a sign, a reopen): for the dacd_signer_errors_total counter. */
  readonly onError?: (err: DacdError) => void;
  /** First and longest wait between two reopen attempts (default 1 s and 30 s). */
  readonly reopenBackoffMs?: { readonly base: number; readonly max: number };
}

/** The signer's view of its token, for readiness and status. */
export interface SignerHealth {
  readonly ok: boolean;
  /** Why the token is unusable (absent while it is fine). */
  readonly reason?: string;
  readonly since?: string;
}

const DEFAULT_TIMEOUT_MS = 10_000;

export class Pkcs11Signer implements Signer {
  readonly chainKind = "ethereum" as const;
  readonly custody = "pkcs11" as const;
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, (reply: TokenReply) => void>();
  private key: { point: Uint8Array; address: string } = { point: new Uint8Array(), address: "" };
  private broken: { reason: string; since: string; failures: number; retryAt: number } | undefined;
  /** Calls go one at a time: the worker holds one session. */
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(private readonly opts: Pkcs11SignerOptions) {}

  /**
   * Opens the token and finds the member key; a wrong PIN, a missing key or another curve is a
   * CONFIG error (one line, exit 78), a token that does not answer a SIGNER one.
   */
  static async open(opts: Pkcs11SignerOptions): Promise<Pkcs11Signer> {
    const signer = new Pkcs11Signer(opts);
    try {
      signer.key = await signer.openSession();
      return signer;
    } catch (err) {
      await signer.close();
      throw err;
    }
  }

  /** The member's checksummed address, derived from the token's public key. */
  get memberKey(): string {
    return this.key.address;
  }

  get health(): SignerHealth {
    return this.broken ? { ok: false, reason: this.broken.reason, since: this.broken.since } : { ok: true };
  }

  sign(claimHash: Uint8Array): Promise<string> {
    if (!(claimHash instanceof Uint8Array) || claimHash.length !== 32)
      throw new RangeError("claim hash must be 32 bytes");
    const run = this.queue.then(() => this.signNow(claimHash));
    this.queue = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (!worker) return;
    await this.call(worker, { op: "close" }).catch(() => undefined);
    await worker.terminate();
  }

  toJSON(): { chainKind: "ethereum"; memberKey: string; custody: "pkcs11" } {
    return { chainKind: this.chainKind, memberKey: this.memberKey, custody: this.custody };
  }

  private async signNow(claim: Uint8Array): Promise<string> {
    if (this.broken) await this.reopen();
    let raw: Uint8Array;
    try {
      const reply = await this.call(this.ensureWorker(), { op: "sign", hash: claim });
      if (!("raw" in reply)) throw new DacdError("SIGNER", "PKCS#11 token: the worker answered no signature");
      raw = reply.raw;
    } catch (err) {
      throw this.failed(err);
    }
    let sig: string;
    try {
      sig = postedSignature(raw, claim, this.key.point);
      // The form the committee contract checks, on the posted bytes themselves.
      if (recoverAddress(claim, sig) !== this.memberKey) throw new RangeError("recovers to another address");
    } catch (err) {
      throw this.failed(
        new DacdError(
          "SIGNER",
          `PKCS#11 token: its signature does not verify against ${this.memberKey} (${(err as Error).message})`,
        ),
      );
    }
    this.broken = undefined;
    return sig;
  }

  /** Opens a new session, when the back-off allows, and checks that it holds the same key. */
  private async reopen(): Promise<void> {
    const broken = this.broken!;
    const wait = broken.retryAt - Date.now();
    if (wait > 0)
      throw new DacdError(
        "SIGNER",
        `PKCS#11 token unavailable since ${broken.since} (${broken.reason}); reopening in ${Math.ceil(wait / 1000)} s`,
      );
    let key: { point: Uint8Array; address: string };
    try {
      key = await this.openSession();
    } catch (err) {
      throw this.failed(err);
    }
    if (key.address !== this.memberKey)
      throw this.failed(
        new DacdError(
          "SIGNER",
          `PKCS#11 token: the key labelled ${JSON.stringify(this.opts.spec.keyLabel)} is now ${key.address}, not the member key ${this.memberKey}; nothing is signed with it`,
        ),
      );
  }

  private async openSession(): Promise<{ point: Uint8Array; address: string }> {
    const reply = await this.call(this.ensureWorker(), { op: "open", spec: this.opts.spec });
    if (!("address" in reply)) throw new DacdError("SIGNER", "PKCS#11 token: the worker answered no key");
    return { point: reply.point, address: reply.address };
  }

  /** Records a failed call (for health, the metric and the back-off) and returns it as a SIGNER error. */
  private failed(err: unknown): DacdError {
    const e =
      err instanceof DacdError && err.code === "SIGNER"
        ? err
        : new DacdError("SIGNER", err instanceof Error ? err.message : String(err), { cause: err });
    const failures = (this.broken?.failures ?? 0) + 1;
    const { base, max } = this.opts.reopenBackoffMs ?? { base: 1000, max: 30_000 };
    this.broken = {
      reason: e.message,
      since: this.broken?.since ?? new Date().toISOString(),
      failures,
      retryAt: Date.now() + Math.min(max, base * 2 ** (failures - 1)),
    };
    this.opts.onError?.(e);
    return e;
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const script = workerScript(import.meta.url, "token-worker.js");
    if (!script)
      throw new DacdError("SIGNER", "PKCS#11 token: the worker script is missing (run npm run build)");
    const worker = new Worker(script, { stdout: false, stderr: false });
    worker.on("message", (reply: TokenReply) => {
      const done = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      done?.(reply);
    });
    worker.on("error", () => this.abandon(worker));
    worker.on("exit", () => this.abandon(worker));
    worker.unref();
    this.worker = worker;
    return worker;
  }

  /** A worker that ended or hung: its session is gone; the next call starts another. */
  private abandon(worker: Worker): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    void worker.terminate();
  }

  private call(worker: Worker, req: TokenCall): Promise<TokenReply> {
    const id = this.nextId++;
    const timeoutMs = this.opts.callTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    return new Promise<TokenReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        // A call into the library cannot be interrupted: the worker is left to it and replaced.
        this.abandon(worker);
        reject(
          new DacdError("SIGNER", `PKCS#11 token: ${req.op} did not answer within ${timeoutMs / 1000} s`),
        );
      }, timeoutMs);
      this.pending.set(id, (reply) => {
        clearTimeout(timer);
        if ("error" in reply) reject(reviveDacdError(reply.error));
        else resolve(reply);
      });
      worker.ref();
      worker.postMessage({ ...req, id } as TokenRequest);
    }).finally(() => {
      if (this.pending.size === 0) worker.unref();
    });
  }
}
