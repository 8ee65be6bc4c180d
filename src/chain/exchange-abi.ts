/**
 * What dacd reads of a StarkEx exchange contract: its root-update and freeze events and the views
 * that name the committed state. Spot exchanges from v4.5 on log the validium and rollup vault
 * roots, spot v4.0 one vault root; perpetual ones log only the batch, their roots are the views'.
 */
import { parseAbi } from "viem";

export const EXCHANGE_ABI = parseAbi([
  "event LogRootUpdate(uint256 sequenceNumber, uint256 batchId, uint256 validiumVaultRoot, uint256 rollupVaultRoot, uint256 orderRoot)",
  "event LogRootUpdate(uint256 sequenceNumber, uint256 batchId, uint256 vaultRoot, uint256 orderRoot)",
  "event LogUpdateState(uint256 sequenceNumber, uint256 batchId)",
  "event LogFrozen()",
  "function isFrozen() view returns (bool)",
  "function getLastBatchId() view returns (uint256)",
  "function getSequenceNumber() view returns (uint256)",
  // StarkEx from v4.5 (and perpetual): the validium vault tree's root and height.
  "function getValidiumVaultRoot() view returns (uint256)",
  "function getValidiumTreeHeight() view returns (uint256)",
  "function getRollupVaultRoot() view returns (uint256)",
  // StarkEx v4.0's names of the same.
  "function getVaultRoot() view returns (uint256)",
  "function getVaultTreeHeight() view returns (uint256)",
  "function getOrderRoot() view returns (uint256)",
  "function getSystemAssetType() view returns (uint256)",
]);

/** A perpetual exchange's state update: the Cairo program's output and the operator's application data. */
export const PERPETUAL_UPDATE_STATE_ABI = parseAbi([
  "function updateState(uint256[] programOutput, uint256[] applicationData)",
]);

/** The events the watch reads, in one eth_getLogs filter. */
export const WATCHED_EVENTS = EXCHANGE_ABI.filter((item) => item.type === "event");
