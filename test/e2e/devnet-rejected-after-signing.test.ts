import { rm } from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import { post } from "../../src/devnet/client.js";
import { startDevnet } from "../../src/devnet/main.js";
import { ethAddressFromPrivateKey } from "../../src/signer/eth-signer.js";
import { memberSetup, startQuietDaemon, waitFor } from "../helpers/daemon.js";

const KEY = "0x1111111111111111111111111111111111111111111111111111111111111111";
const ADDRESS = ethAddressFromPrivateKey(new Uint8Array(Buffer.from(KEY.slice(2), "hex")));

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * The operator drops a batch between this member's signature and its post: the post is refused
 * for good (409 BATCH_REJECTED), and the next batch builds on the batch before. The member must
 * move past the batch it signed rather than re-post it forever. Batches are cut by hand and the
 * post held by the devnet's `hang` fault, so the order of events is fixed, not raced.
 */
describe("a batch the operator drops after the member signed it", () => {
  it("is skipped once the next batch builds on an earlier one; the member signs that next batch", async () => {
    const dn = await startDevnet({
      variant: "G",
      committee: [ADDRESS],
      quorum: 1,
      traffic: 0,
      batchIntervalMs: 3_600_000,
      batchSize: 20,
      seed: 11,
    });
    cleanups.push(() => dn.close());
    const setup = await memberSetup({ profile: "spot", privateKey: KEY, gatewayUrl: dn.urls.availability });
    const daemon = await startQuietDaemon({ ...setup.config, feederGatewayUrl: dn.urls.feeder });
    cleanups.push(async () => {
      await daemon.stop();
      await rm(setup.dir, { recursive: true, force: true });
    });

    await dn.cutBatch(true);
    expect((await dn.waitForQuorum(0, 30_000)).reached).toBe(true);

    // Batch 1's post waits 3 s at the gateway; meanwhile the operator rejects batch 1.
    const hang = await post(`${dn.urls.availability}/devnet/fault`, {
      type: "hang",
      ms: 3_000,
      count: 1,
      scope: "availability",
      path: "/availability_gateway/approve_new_roots",
    });
    expect(hang.status).toBe(200);
    await dn.cutBatch(true);
    await waitFor(
      async () => (await daemon.store.getBatch(1)) !== undefined,
      30_000,
      "batch 1 signed and stored",
    );
    const reject = await post(`${dn.urls.availability}/devnet/fault`, { type: "reject_batch", batch_id: 1 });
    expect(reject.status).toBe(200);
    expect(reject.json).toMatchObject({ rejected: 1, head_batch_id: 0 });

    const next = await dn.cutBatch(true);
    expect(next?.prevBatchId).toBe(0);
    const q = await dn.waitForQuorum(2, 60_000);
    expect(q.reached).toBe(true);
    expect(q.signers).toEqual([ADDRESS]);
    // The cursor moves once the gateway's answer is back, after the devnet counted the signature.
    await waitFor(
      async () => (await daemon.store.getCursor())?.last_accepted_batch_id === 2,
      30_000,
      "batch 2 accepted in the member's cursor",
    );
    expect((await daemon.store.getCursor())?.skipped).toEqual([1]);
    // Batch 1 stays as signed, never accepted.
    const stored = await daemon.store.getBatch(1);
    expect(stored?.signature).toMatch(/^0x[0-9a-f]+$/);
    expect(stored?.accepted_at).toBeUndefined();
  });
});
