// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.26;

/// The verifier's fact registry, as StarkEx's exchange reads it.
interface IFactRegistry {
    function isValid(bytes32 fact) external view returns (bool);
}

/// The part of an ERC-20 token `withdraw` pays with.
interface IERC20Transfer {
    function transfer(address to, uint256 value) external returns (bool);
}

/**
 * A stand-in for a StarkEx exchange contract, for `dacd devnet --chain` and the tests: it has the
 * events and views a committee member follows (src/chain/exchange-abi.ts) and a user's way out,
 * with the names, signatures and revert reasons of StarkEx's, and none of its STARK proofs. The
 * owner (the devnet operator) commits each batch's roots once the committee has signed it, and
 * never serves a forced request, so a user's request freezes the exchange once the grace period
 * has passed (the owner may also freeze it at once, for demos). A perpetual exchange takes a batch
 * as StarkEx's does, as the Cairo program's output, whose new shared state (roots, funding
 * indices, prices) a user's escape is checked against. Escapes are checked on-chain by the escape
 * verifier (contracts/EscapeVerifiers.sol); withdrawals pay the devnet's ERC-20 token and ETH.
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
    event LogUserRegistered(address ethKey, uint256 starkKey, address sender);
    event LogFullWithdrawalRequest(uint256 ownerKey, uint256 vaultId);
    event LogForcedWithdrawalRequest(uint256 starkKey, uint256 vaultId, uint256 quantizedAmount);
    event LogTokenRegistered(uint256 assetType, bytes assetInfo, uint256 quantum);
    event LogWithdrawalPerformed(
        uint256 ownerKey,
        uint256 assetType,
        uint256 nonQuantizedAmount,
        uint256 quantizedAmount,
        address recipient
    );

    /// Which of the events above a root update emits, and which requests and escapes it takes.
    enum Flavor {
        Spot,
        SpotV40,
        Perpetual
    }

    address private immutable owner;
    Flavor private immutable flavor;
    uint256 private immutable vaultTreeHeight;
    /// Seconds between a forced request and the freeze it allows (StarkEx: 7 days).
    uint256 private immutable freezeGracePeriod;
    address private immutable escapeVerifier;

    uint256 private sequenceNumber;
    uint256 private lastBatchId;
    uint256 private vaultRoot;
    uint256 private rollupVaultRoot;
    uint256 private orderRoot;
    bool private frozen;
    /// Perpetual: keccak256 of the last accepted shared state, as StarkEx's escape checks it.
    bytes32 private sharedStateHash;

    mapping(uint256 => address) private ethKeys;
    /// A forced request's time, by keccak256 of its kind and arguments.
    mapping(bytes32 => uint256) private forcedRequests;
    mapping(uint256 => bool) private escapesUsed;
    /// Quantized amounts waiting for `withdraw`, by owner key and asset id.
    mapping(uint256 => mapping(uint256 => uint256)) private pendingWithdrawals;
    mapping(uint256 => bytes) private assetInfos;
    mapping(uint256 => uint256) private quanta;

    /// The perpetual collateral's asset type (what `withdraw` takes after an escape).
    uint256 private constant SYSTEM_ASSET_TYPE = 0x02893294412a4c8f915f75892b395ebbf6859ec246ec365c3b1f56f47c3a0a5d;

    /// Program output offsets (StarkEx perpetual's ProgramOutputOffsets).
    uint256 private constant PROG_OUT_N_ASSET_CONFIGS = 2;
    uint256 private constant PROG_OUT_ASSET_CONFIG_HASHES = 3;
    uint256 private constant PROG_OUT_N_WORDS_PER_ASSET_CONFIG = 2;
    uint256 private constant STATE_OFFSET_VAULTS_ROOT = 0;
    uint256 private constant STATE_OFFSET_ORDERS_ROOT = 2;
    uint256 private constant APP_DATA_BATCH_ID_OFFSET = 0;

    uint256 private constant K_MODULUS = 0x800000000000011000000000000000000000000000000000000000000000001;
    uint256 private constant MASK_ADDRESS = (1 << 160) - 1;
    uint256 private constant PERPETUAL_POSITION_ID_UPPER_BOUND = 1 << 64;
    uint256 private constant PERPETUAL_AMOUNT_UPPER_BOUND = 1 << 64;
    bytes4 private constant ERC20_SELECTOR = bytes4(keccak256("ERC20Token(address)"));
    bytes4 private constant ETH_SELECTOR = bytes4(keccak256("ETH()"));

    constructor(Flavor flavor_, uint256 vaultTreeHeight_, uint256 freezeGracePeriod_, address escapeVerifier_) {
        owner = msg.sender;
        flavor = flavor_;
        vaultTreeHeight = vaultTreeHeight_;
        freezeGracePeriod = freezeGracePeriod_;
        escapeVerifier = escapeVerifier_;
    }

    /// The ETH the exchange pays withdrawals with (the devnet funds it at deployment).
    receive() external payable {}

    modifier onlyOwner() {
        require(msg.sender == owner, "ONLY_OWNER");
        _;
    }

    modifier notFrozen() {
        require(!frozen, "STATE_IS_FROZEN");
        _;
    }

    modifier onlyFrozen() {
        require(frozen, "STATE_NOT_FROZEN");
        _;
    }

    modifier onlySpot() {
        require(flavor != Flavor.Perpetual, "NOT_SPOT");
        _;
    }

    modifier onlyPerpetual() {
        require(flavor == Flavor.Perpetual, "NOT_PERPETUAL");
        _;
    }

    modifier onlyKeyOwner(uint256 ownerKey) {
        require(msg.sender == strictGetEthKey(ownerKey), "MISMATCHING_STARK_ETH_KEYS");
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
    ) external onlyOwner notFrozen onlyPerpetual {
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

    /**
     * Names an on-chain asset: `assetType` pays `assetInfo`'s token (StarkEx's encoding: the
     * selector of ERC20Token(address) and the address, or of ETH()) in units of `quantum`.
     * StarkEx requires the asset type to be the hash of the two; the devnet's asset ids come
     * first (its users' vaults hold them already), so they are mapped as they are.
     */
    function registerToken(uint256 assetType, bytes calldata assetInfo, uint256 quantum) external onlyOwner {
        require(quanta[assetType] == 0, "ASSET_ALREADY_REGISTERED");
        require(quantum > 0 && quantum < 1 << 128, "INVALID_QUANTUM");
        bytes4 selector = bytes4(assetInfo[:4]);
        require(
            (selector == ETH_SELECTOR && assetInfo.length == 4) ||
                (selector == ERC20_SELECTOR && assetInfo.length == 36),
            "UNSUPPORTED_TOKEN_TYPE"
        );
        assetInfos[assetType] = assetInfo;
        quanta[assetType] = quantum;
        emit LogTokenRegistered(assetType, assetInfo, quantum);
    }

    /**
     * Ties `starkKey` to `ethKey`. StarkEx checks a STARK signature of the pair by the key's
     * owner; the devnet's users' keys have no private keys, so the devnet takes the signature's
     * three words unchecked (any key not yet registered may be claimed: a devnet, not a custody).
     */
    function registerEthAddress(address ethKey, uint256 starkKey, bytes calldata starkSignature) public {
        require(starkKey != 0 && starkKey < K_MODULUS, "INVALID_STARK_KEY");
        require(ethKey != address(0), "INVALID_ETH_ADDRESS");
        require(ethKeys[starkKey] == address(0), "STARK_KEY_UNAVAILABLE");
        require(starkSignature.length == 32 * 3, "INVALID_STARK_SIGNATURE_LENGTH");
        ethKeys[starkKey] = ethKey;
        emit LogUserRegistered(ethKey, starkKey, msg.sender);
    }

    function registerSender(uint256 starkKey, bytes calldata starkSignature) external {
        registerEthAddress(msg.sender, starkKey, starkSignature);
    }

    /// The address registered to `ownerKey`; a key that is itself an address owns itself; else 0.
    function getEthKey(uint256 ownerKey) public view returns (address) {
        address registered = ethKeys[ownerKey];
        if (registered != address(0)) return registered;
        return ownerKey == (ownerKey & MASK_ADDRESS) ? address(uint160(ownerKey)) : address(0);
    }

    function strictGetEthKey(uint256 ownerKey) private view returns (address ethKey) {
        ethKey = getEthKey(ownerKey);
        require(ethKey != address(0), "USER_UNREGISTERED");
    }

    // ---- Forced requests and the freeze ----

    /// Spot: asks the operator to withdraw the whole vault; unserved, it allows a freeze.
    function fullWithdrawalRequest(uint256 ownerKey, uint256 vaultId)
        external
        notFrozen
        onlySpot
        onlyKeyOwner(ownerKey)
    {
        require(vaultId < 2 ** vaultTreeHeight, "OUT_OF_RANGE_VAULT_ID");
        forcedRequests[fullWithdrawalKey(ownerKey, vaultId)] = block.timestamp;
        emit LogFullWithdrawalRequest(ownerKey, vaultId);
    }

    function getFullWithdrawalRequest(uint256 ownerKey, uint256 vaultId) external view returns (uint256) {
        return forcedRequests[fullWithdrawalKey(ownerKey, vaultId)];
    }

    function freezeRequest(uint256 ownerKey, uint256 vaultId) external notFrozen onlySpot {
        require(vaultId < 2 ** vaultTreeHeight, "OUT_OF_RANGE_VAULT_ID");
        validateFreezeRequest(forcedRequests[fullWithdrawalKey(ownerKey, vaultId)]);
        freezeNow();
    }

    /// Perpetual: asks the operator to withdraw `quantizedAmount` of collateral from the position.
    function forcedWithdrawalRequest(
        uint256 starkKey,
        uint256 vaultId,
        uint256 quantizedAmount,
        bool premiumCost
    ) external notFrozen onlyPerpetual onlyKeyOwner(starkKey) {
        premiumCost; // StarkEx's rate limit for requests in a block; the devnet has none.
        require(vaultId < PERPETUAL_POSITION_ID_UPPER_BOUND, "OUT_OF_RANGE_POSITION_ID");
        require(quantizedAmount < PERPETUAL_AMOUNT_UPPER_BOUND, "ILLEGAL_AMOUNT");
        bytes32 key = forcedWithdrawalKey(starkKey, vaultId, quantizedAmount);
        require(forcedRequests[key] == 0, "REQUEST_ALREADY_PENDING");
        forcedRequests[key] = block.timestamp;
        emit LogForcedWithdrawalRequest(starkKey, vaultId, quantizedAmount);
    }

    function getForcedWithdrawalRequest(
        uint256 starkKey,
        uint256 vaultId,
        uint256 quantizedAmount
    ) external view returns (uint256) {
        return forcedRequests[forcedWithdrawalKey(starkKey, vaultId, quantizedAmount)];
    }

    function freezeRequest(
        uint256 starkKey,
        uint256 vaultId,
        uint256 quantizedAmount
    ) external notFrozen onlyPerpetual {
        require(vaultId < PERPETUAL_POSITION_ID_UPPER_BOUND, "OUT_OF_RANGE_POSITION_ID");
        validateFreezeRequest(forcedRequests[forcedWithdrawalKey(starkKey, vaultId, quantizedAmount)]);
        freezeNow();
    }

    function FREEZE_GRACE_PERIOD() external view returns (uint256) {
        return freezeGracePeriod;
    }

    /// The devnet operator's quick freeze (for demos): no request needed.
    function freeze() external onlyOwner notFrozen {
        freezeNow();
    }

    function validateFreezeRequest(uint256 requestTime) private view {
        require(requestTime != 0, "FORCED_ACTION_UNREQUESTED");
        require(block.timestamp >= requestTime + freezeGracePeriod, "FORCED_ACTION_PENDING");
    }

    function freezeNow() private {
        frozen = true;
        emit LogFrozen();
    }

    function fullWithdrawalKey(uint256 ownerKey, uint256 vaultId) private pure returns (bytes32) {
        return keccak256(abi.encode("FULL_WITHDRAWAL", ownerKey, vaultId));
    }

    function forcedWithdrawalKey(
        uint256 starkKey,
        uint256 vaultId,
        uint256 quantizedAmount
    ) private pure returns (bytes32) {
        return keccak256(abi.encode("FORCED_WITHDRAWAL", starkKey, vaultId, quantizedAmount));
    }

    // ---- Escapes and withdrawals ----

    /// Spot: credits the frozen vault's balance, once, if the verifier has checked its proof.
    function escape(
        uint256 ownerKey,
        uint256 vaultId,
        uint256 assetId,
        uint256 quantizedAmount
    ) external onlyFrozen onlySpot {
        require(vaultId < 2 ** vaultTreeHeight, "OUT_OF_RANGE_VAULT_ID");
        require(!escapesUsed[vaultId], "ESCAPE_ALREADY_USED");
        escapesUsed[vaultId] = true;
        bytes32 claim = keccak256(
            abi.encode(ownerKey, assetId, quantizedAmount, vaultRoot, vaultTreeHeight, vaultId)
        );
        require(IFactRegistry(escapeVerifier).isValid(claim), "ESCAPE_LACKS_PROOF");
        pendingWithdrawals[ownerKey][assetId] += quantizedAmount;
    }

    /// Perpetual: credits the position's withdrawal amount, once, checked against the frozen shared state.
    function escape(
        uint256 starkKey,
        uint256 vaultId,
        uint256 quantizedAmount
    ) external onlyFrozen onlyPerpetual {
        require(!escapesUsed[vaultId], "ESCAPE_ALREADY_USED");
        escapesUsed[vaultId] = true;
        bytes32 claim = keccak256(abi.encode(starkKey, quantizedAmount, sharedStateHash, vaultId));
        require(IFactRegistry(escapeVerifier).isValid(claim), "ESCAPE_LACKS_PROOF");
        pendingWithdrawals[starkKey][SYSTEM_ASSET_TYPE] += quantizedAmount;
    }

    /// Pays the owner key's pending balance of an ETH or ERC-20 asset to its Ethereum address (anyone may send it).
    function withdraw(uint256 ownerKey, uint256 assetType) external {
        address payable recipient = payable(strictGetEthKey(ownerKey));
        bytes memory info = getAssetInfo(assetType);
        uint256 quantizedAmount = pendingWithdrawals[ownerKey][assetType];
        pendingWithdrawals[ownerKey][assetType] = 0;
        uint256 amount = fromQuantized(assetType, quantizedAmount);
        if (amount > 0) {
            if (bytes4(info) == ETH_SELECTOR) {
                (bool ok, ) = recipient.call{value: amount}("");
                require(ok, "ETH_TRANSFER_FAILED");
            } else {
                address token;
                assembly {
                    token := mload(add(info, 36))
                }
                require(IERC20Transfer(token).transfer(recipient, amount), "TOKEN_TRANSFER_FAILED");
            }
        }
        emit LogWithdrawalPerformed(ownerKey, assetType, amount, quantizedAmount, recipient);
    }

    /// ERC-721/1155 assets: the devnet has none.
    function withdrawWithTokenId(uint256, uint256, uint256) external pure {
        revert("INVALID_ASSET_TYPE");
    }

    /// Mintable assets: the devnet has none.
    function withdrawAndMint(uint256, uint256, bytes calldata) external pure {
        revert("NON_MINTABLE_ASSET_TYPE");
    }

    /// The pending balance in the asset's own units (quantized × quantum), as StarkEx's.
    function getWithdrawalBalance(uint256 ownerKey, uint256 assetId) external view returns (uint256) {
        return fromQuantized(assetId, pendingWithdrawals[ownerKey][assetId]);
    }

    function getAssetInfo(uint256 assetType) public view returns (bytes memory) {
        require(quanta[assetType] != 0, "ASSET_TYPE_NOT_REGISTERED");
        return assetInfos[assetType];
    }

    /// An unregistered asset's quantum is 1, as StarkEx's.
    function getQuantum(uint256 presumedAssetType) public view returns (uint256) {
        uint256 quantum = quanta[presumedAssetType];
        return quantum == 0 ? 1 : quantum;
    }

    function fromQuantized(uint256 assetType, uint256 quantizedAmount) private view returns (uint256) {
        return quantizedAmount * getQuantum(assetType);
    }

    function getEscapeVerifier() external view returns (address) {
        return escapeVerifier;
    }

    // ---- The state's views (StarkEx's names; spot v4.0's for its flavor as well) ----

    function isFrozen() external view returns (bool) {
        return frozen;
    }

    function getLastBatchId() external view returns (uint256) {
        return lastBatchId;
    }

    function getSequenceNumber() external view returns (uint256) {
        return sequenceNumber;
    }

    /// The vault root (spot from v4.5; perpetual: the position root).
    function getValidiumVaultRoot() external view returns (uint256) {
        return vaultRoot;
    }

    function getValidiumTreeHeight() external view returns (uint256) {
        return vaultTreeHeight;
    }

    function getRollupVaultRoot() external view returns (uint256) {
        return rollupVaultRoot;
    }

    function getRollupTreeHeight() external view returns (uint256) {
        return vaultTreeHeight;
    }

    function getOrderRoot() external view returns (uint256) {
        return orderRoot;
    }

    /// Spot v4.0's name of the vault root.
    function getVaultRoot() external view returns (uint256) {
        return vaultRoot;
    }

    /// Spot v4.0's name of the vault tree's height.
    function getVaultTreeHeight() external view returns (uint256) {
        return vaultTreeHeight;
    }

    function getSystemAssetType() external pure returns (uint256) {
        return SYSTEM_ASSET_TYPE;
    }

    /// Not a StarkEx view (its hash is internal there): the devnet's tests read it.
    function getSharedStateHash() external view returns (bytes32) {
        return sharedStateHash;
    }
}
