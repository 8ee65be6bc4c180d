// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.26;

/**
 * A stand-in for a StarkEx exchange contract, for `dacd devnet --chain` and the tests: it has the
 * events and views a committee member follows (src/chain/exchange-abi.ts), with the names and
 * signatures of StarkEx's, and none of its proofs. The owner (the devnet operator) commits each
 * batch's roots once the committee has signed it, and may freeze the exchange, which a real one
 * does when an escape request goes unanswered. A perpetual exchange takes a batch as StarkEx's
 * does, as the Cairo program's output, whose new shared state (roots, funding indices, prices)
 * a user's escape is checked against.
 */
contract DevnetExchange {
    /// Spot exchanges from StarkEx v4.5 on.
    event LogRootUpdate(
        uint256 sequenceNumber,
        uint256 batchId,
        uint256 validiumVaultRoot,
        uint256 rollupVaultRoot,
        uint256 orderRoot
    );
    /// Spot exchanges before v4.5 (profile spot-v4.0).
    event LogRootUpdate(uint256 sequenceNumber, uint256 batchId, uint256 vaultRoot, uint256 orderRoot);
    /// Perpetual exchanges: the roots are read from the views.
    event LogUpdateState(uint256 sequenceNumber, uint256 batchId);
    event LogFrozen();

    /// Which of the events above a root update emits.
    enum Flavor {
        Spot,
        SpotV40,
        Perpetual
    }

    address private immutable owner;
    Flavor private immutable flavor;
    uint256 private immutable vaultTreeHeight;

    uint256 private sequenceNumber;
    uint256 private lastBatchId;
    uint256 private vaultRoot;
    uint256 private rollupVaultRoot;
    uint256 private orderRoot;
    bool private frozen;
    /// Perpetual: keccak256 of the last accepted shared state, as StarkEx's escape checks it.
    bytes32 private sharedStateHash;

    /// The perpetual collateral's asset type (what `withdraw` takes after an escape).
    uint256 private constant SYSTEM_ASSET_TYPE = 0x02893294412a4c8f915f75892b395ebbf6859ec246ec365c3b1f56f47c3a0a5d;

    /// Program output offsets (StarkEx perpetual's ProgramOutputOffsets).
    uint256 private constant PROG_OUT_N_ASSET_CONFIGS = 2;
    uint256 private constant PROG_OUT_ASSET_CONFIG_HASHES = 3;
    uint256 private constant PROG_OUT_N_WORDS_PER_ASSET_CONFIG = 2;
    uint256 private constant STATE_OFFSET_VAULTS_ROOT = 0;
    uint256 private constant STATE_OFFSET_ORDERS_ROOT = 2;
    uint256 private constant APP_DATA_BATCH_ID_OFFSET = 0;

    constructor(Flavor flavor_, uint256 vaultTreeHeight_) {
        owner = msg.sender;
        flavor = flavor_;
        vaultTreeHeight = vaultTreeHeight_;
    }

    modifier onlyOwner() {
        require(msg.sender == owner, "ONLY_OWNER");
        _;
    }

    modifier notFrozen() {
        require(!frozen, "STATE_IS_FROZEN");
        _;
    }

    /// Commits batch `batchId`'s roots (perpetual: vaultRoot_ is the position root; rollupVaultRoot_ is ignored outside spot).
    function updateState(
        uint256 batchId,
        uint256 vaultRoot_,
        uint256 rollupVaultRoot_,
        uint256 orderRoot_
    ) external onlyOwner notFrozen {
        sequenceNumber += 1;
        lastBatchId = batchId;
        vaultRoot = vaultRoot_;
        rollupVaultRoot = rollupVaultRoot_;
        orderRoot = orderRoot_;
        if (flavor == Flavor.Spot) {
            emit LogRootUpdate(sequenceNumber, batchId, vaultRoot_, rollupVaultRoot_, orderRoot_);
        } else if (flavor == Flavor.SpotV40) {
            emit LogRootUpdate(sequenceNumber, batchId, vaultRoot_, orderRoot_);
        } else {
            emit LogUpdateState(sequenceNumber, batchId);
        }
    }

    /**
     * Perpetual: commits a batch from the program output as StarkEx perpetual's updateState reads
     * it (asset configs, previous shared state, new shared state, then the rest, unread here) and
     * the application data (batch id first).
     */
    function updateState(
        uint256[] calldata programOutput,
        uint256[] calldata applicationData
    ) external onlyOwner notFrozen {
        require(flavor == Flavor.Perpetual, "NOT_PERPETUAL");
        uint256 offset = PROG_OUT_ASSET_CONFIG_HASHES +
            programOutput[PROG_OUT_N_ASSET_CONFIGS] * PROG_OUT_N_WORDS_PER_ASSET_CONFIG;
        uint256 prevSize = programOutput[offset++];
        offset += prevSize;
        uint256 newSize = programOutput[offset++];
        require(newSize > STATE_OFFSET_ORDERS_ROOT && programOutput.length >= offset + newSize, "BAD_OUTPUT");
        uint256[] calldata newState = programOutput[offset:offset + newSize];
        sharedStateHash = keccak256(abi.encodePacked(newState));
        sequenceNumber += 1;
        lastBatchId = applicationData[APP_DATA_BATCH_ID_OFFSET];
        vaultRoot = newState[STATE_OFFSET_VAULTS_ROOT];
        orderRoot = newState[STATE_OFFSET_ORDERS_ROOT];
        emit LogUpdateState(sequenceNumber, lastBatchId);
    }

    function freeze() external onlyOwner notFrozen {
        frozen = true;
        emit LogFrozen();
    }

    function isFrozen() external view returns (bool) {
        return frozen;
    }

    function getLastBatchId() external view returns (uint256) {
        return lastBatchId;
    }

    function getSequenceNumber() external view returns (uint256) {
        return sequenceNumber;
    }

    function getVaultRoot() external view returns (uint256) {
        return vaultRoot;
    }

    function getRollupVaultRoot() external view returns (uint256) {
        return rollupVaultRoot;
    }

    function getVaultTreeHeight() external view returns (uint256) {
        return vaultTreeHeight;
    }

    function getOrderRoot() external view returns (uint256) {
        return orderRoot;
    }

    function getSystemAssetType() external pure returns (uint256) {
        return SYSTEM_ASSET_TYPE;
    }

    /// Not a StarkEx view (its hash is internal there): the devnet's tests read it.
    function getSharedStateHash() external view returns (bytes32) {
        return sharedStateHash;
    }
}
