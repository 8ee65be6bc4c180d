// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.26;

/**
 * A stand-in for a StarkEx exchange contract, for `dacd devnet --chain` and the tests: it has the
 * events and views a committee member follows (src/chain/exchange-abi.ts), with the names and
 * signatures of StarkEx's, and none of its proofs. The owner (the devnet operator) commits each
 * batch's roots once the committee has signed it, and may freeze the exchange, which a real one
 * does when an escape request goes unanswered.
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
}
