// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.26;

import "./StarkPedersen.sol";

/**
 * What the devnet's two escape verifiers share: reading the proof's rows, checking with Pedersen,
 * on-chain, that each row hashes into the next up to the root, and the registry of the facts the
 * exchange's `escape` asks for (`isValid`). The proof words are StarkEx's: row i is words 2i and
 * 2i+1, the 512-bit number left (252 bits) ‖ right (252 bits) ‖ 8 zero bits; the last row is the
 * root ‖ 4 zero bits ‖ a 248-bit index whose bits say where each row's hash sits in the next.
 * Revert reasons are the strings of StarkEx's verifiers, so a user sees the same words on the devnet
 * as on mainnet.
 */
abstract contract PedersenMerkleFacts {
    address private immutable tableA0;
    address private immutable tableA1;
    address private immutable tableA2;
    address private immutable tableB0;
    address private immutable tableB1;
    address private immutable tableB2;
    mapping(bytes32 => bool) private facts;

    /// The table contracts of the first input, then of the second (StarkPedersen).
    constructor(address[3] memory tableA, address[3] memory tableB) {
        (tableA0, tableA1, tableA2) = (tableA[0], tableA[1], tableA[2]);
        (tableB0, tableB1, tableB2) = (tableB[0], tableB[1], tableB[2]);
    }

    function tables() private view returns (uint256[] memory a, uint256[] memory b) {
        a = StarkPedersen.loadTable([tableA0, tableA1, tableA2]);
        b = StarkPedersen.loadTable([tableB0, tableB1, tableB2]);
    }

    function isValid(bytes32 fact) external view returns (bool) {
        return facts[fact];
    }

    function registerFact(bytes32 fact) internal {
        facts[fact] = true;
    }

    /// Pedersen H(a, b), as the verifiers compute it (the devnet's tests compare it with dacd's).
    function pedersenHash(uint256 a, uint256 b) external view returns (uint256) {
        require(a < StarkPedersen.PRIME && b < StarkPedersen.PRIME, "Value out of range.");
        (uint256[] memory ta, uint256[] memory tb) = tables();
        return StarkPedersen.hash(a, b, ta, tb);
    }

    /// Row r's left and right values; both below the STARK prime and the 8 low bits zero.
    function row(uint256[] calldata words, uint256 r) internal pure returns (uint256 left, uint256 right) {
        uint256 high = words[2 * r];
        uint256 low = words[2 * r + 1];
        left = high >> 4;
        right = ((high & 0xf) << 248) | (low >> 8);
        require(low & 0xff == 0, "Value out of range.");
        require(left < StarkPedersen.PRIME && right < StarkPedersen.PRIME, "Value out of range.");
    }

    /**
     * Every row but the last hashes, with Pedersen, to the left value of the next row where bit r
     * of `selectors` is 0, to its right value where it is 1.
     */
    function checkPath(uint256[] calldata words, uint256 selectors) internal view {
        (uint256[] memory a, uint256[] memory b) = tables();
        uint256 rows = words.length / 2;
        (uint256 left, uint256 right) = row(words, 0);
        for (uint256 r = 0; r + 1 < rows; r++) {
            uint256 h = StarkPedersen.hash(left, right, a, b);
            (left, right) = row(words, r + 1);
            require(h == ((selectors >> r) & 1 == 1 ? right : left), "Bad Merkle path.");
        }
    }

    /// The last row: the root and the index (the 4 bits between them zero).
    function rootAndIndex(uint256[] calldata words) internal pure returns (uint256 root, uint256 index) {
        (root, index) = row(words, words.length / 2 - 1);
        require(index >> 248 == 0, "Value out of range.");
    }
}

/**
 * A spot exchange's escape verifier: `verifyEscape(escapeProof)` checks a vault's path, the vault
 * row (stark key, asset id) hashing into the leaf row (its hash, the quantized amount), and
 * registers keccak256(abi.encode(starkKey, assetId, quantizedAmount, root, treeHeight, vaultId)),
 * the fact the exchange's `escape` looks up.
 */
contract SpotEscapeVerifier is PedersenMerkleFacts {
    event LogEscapeVerified(uint256 starkKey, uint256 assetId, uint256 quantizedAmount, uint256 vaultId);

    constructor(address[3] memory tableA, address[3] memory tableB) PedersenMerkleFacts(tableA, tableB) {}

    function verifyEscape(uint256[] calldata escapeProof) external {
        uint256 n = escapeProof.length;
        require(n >= 68, "Proof too short.");
        require(n < 200, "Proof too long.");
        require(n & 1 == 0, "Proof length must be even.");
        // The vault row, the leaf row, one row per level, the root row.
        uint256 height = n / 2 - 3;
        (uint256 root, uint256 vaultId) = rootAndIndex(escapeProof);
        require(vaultId < 2 ** height, "leafIndex not in tree.");
        // The vault row's hash is the leaf row's left value; then the vault id's bits, leaf first.
        checkPath(escapeProof, vaultId << 1);
        (uint256 starkKey, uint256 assetId) = row(escapeProof, 0);
        (, uint256 quantizedAmount) = row(escapeProof, 1);
        registerFact(keccak256(abi.encode(starkKey, assetId, quantizedAmount, root, height, vaultId)));
        emit LogEscapeVerified(starkKey, assetId, quantizedAmount, vaultId);
    }
}

/**
 * A perpetual exchange's escape verifier: `verifyEscape(merkleProof, nAssets, sharedState)`
 * checks a position's path, whose first nAssets + 2 rows are the position's hash chain (from 0:
 * each asset, then the public key, then the biased collateral << 16 | the asset count), computes
 * the amount the position may withdraw at the shared state's funding indices and prices, and
 * registers keccak256(publicKey, amount, keccak256(sharedState), positionId), the fact the
 * exchange's `escape` looks up with the hash of its own shared state.
 */
contract PerpetualEscapeVerifier is PedersenMerkleFacts {
    event LogEscapeVerified(uint256 publicKey, int256 withdrawalAmount, bytes32 sharedStateHash, uint256 positionId);

    uint256 private constant MASK_64 = (1 << 64) - 1;
    int256 private constant BIAS = 2 ** 63;
    uint256 private constant FXP_BITS = 32;
    /// Shared state offsets (StarkEx perpetual's): roots and heights, then the funding indices.
    uint256 private constant STATE_VAULTS_ROOT = 0;
    uint256 private constant STATE_VAULTS_HEIGHT = 1;
    uint256 private constant STATE_N_FUNDING = 4;
    uint256 private constant STATE_FUNDING = 5;

    constructor(address[3] memory tableA, address[3] memory tableB) PedersenMerkleFacts(tableA, tableB) {}

    function verifyEscape(
        uint256[] calldata merkleProof,
        uint256 nAssets,
        uint256[] calldata sharedState
    ) external {
        uint256 n = merkleProof.length;
        require(n >= 4, "Proof too short.");
        require(n <= 402, "Proof too long.");
        require(n & 1 == 0, "Proof length must be even.");
        uint256 chain = nAssets + 2;
        require(n / 2 > chain, "Proof too short.");
        uint256 height = n / 2 - chain - 1;
        (uint256 root, uint256 index) = rootAndIndex(merkleProof);
        require(index & ((1 << chain) - 1) == 0, "Bad position index.");
        uint256 positionId = index >> chain;
        require(positionId < 2 ** height, "leafIndex not in tree.");
        (uint256 start, ) = row(merkleProof, 0);
        require(start == 0, "Bad position hash chain.");
        // Row r's hash goes where bit r + 1 of the index says.
        checkPath(merkleProof, index >> 1);

        require(sharedState.length > STATE_FUNDING, "Bad shared state.");
        require(
            sharedState[STATE_VAULTS_ROOT] == root,
            "merkleProof is inconsistent with the root in the sharedState."
        );
        require(
            sharedState[STATE_VAULTS_HEIGHT] == height,
            "merkleProof is inconsistent with the height in the sharedState."
        );
        (, uint256 publicKey) = row(merkleProof, nAssets);
        int256 amount = withdrawalAmount(merkleProof, nAssets, sharedState);
        require(amount > 0, "Withdrawal amount must be positive.");
        bytes32 stateHash = keccak256(abi.encodePacked(sharedState));
        registerFact(keccak256(abi.encodePacked(publicKey, uint256(amount), stateHash, positionId)));
        emit LogEscapeVerified(publicKey, amount, stateHash, positionId);
    }

    /**
     * The position's value in whole collateral units, rounded down: the collateral, plus each
     * asset's balance times its price, plus the funding owed since the asset's cached index rounded
     * down to a whole unit; prices and indices carry 32 fractional bits. Words wrap as StarkEx's
     * (unchecked), so the amount is the one its verifier computes.
     */
    function withdrawalAmount(
        uint256[] calldata merkleProof,
        uint256 nAssets,
        uint256[] calldata sharedState
    ) private pure returns (int256) {
        (, uint256 last) = row(merkleProof, nAssets + 1);
        require(last & 0xffff == nAssets, "Bad number of assets.");
        require(last >> 16 <= MASK_64, "Bad collateral balance.");
        unchecked {
            int256 total = (int256(last >> 16) - BIAS) << FXP_BITS;
            int256 fundingOwed;
            uint256 previous;
            for (uint256 i = 0; i < nAssets; i++) {
                (, uint256 v) = row(merkleProof, i);
                uint256 id = v >> 128;
                require(id < 1 << 120 && (i == 0 || id > previous), "Bad asset id.");
                previous = id;
                (int256 value, int256 owed) = assetValue(v, sharedState);
                total += value;
                fundingOwed += owed;
            }
            // The funding rounded down to a whole unit: the low 32 bits of its word cleared.
            return (total + fundingOwed - int256(uint256(fundingOwed) & ((1 << FXP_BITS) - 1))) >> FXP_BITS;
        }
    }

    /**
     * A position asset's value at the shared state's price and the funding it owes since its cached
     * index. The shared state: roots and heights, the count and (asset id, index) pairs of the
     * funding indices, their timestamp, then the count and (asset id, price) pairs of the prices.
     */
    function assetValue(uint256 v, uint256[] calldata sharedState) private pure returns (int256 value, int256 owed) {
        uint256 nFunding = sharedState[STATE_N_FUNDING];
        uint256 pricesAt = STATE_FUNDING + 2 * nFunding + 1;
        require(sharedState.length > pricesAt, "Bad shared state.");
        uint256 nPrices = sharedState[pricesAt];
        require(sharedState.length >= pricesAt + 1 + 2 * nPrices, "Bad shared state.");
        uint256 id = v >> 128;
        unchecked {
            int256 balance = int256(v & MASK_64) - BIAS;
            int256 index = int256(find(sharedState, STATE_FUNDING, nFunding, id, "No funding index."));
            int256 price = int256(find(sharedState, pricesAt + 1, nPrices, id, "No price."));
            owed = -(balance * (index - int256((v >> 64) & MASK_64)));
            value = balance * price;
        }
    }

    /// The value of `id` in a table of (id, value) pairs starting at `from`.
    function find(
        uint256[] calldata state,
        uint256 from,
        uint256 count,
        uint256 id,
        string memory missing
    ) private pure returns (uint256) {
        for (uint256 k = 0; k < count; k++) if (state[from + 2 * k] == id) return state[from + 2 * k + 1];
        revert(missing);
    }
}
