// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.26;

/**
 * StarkWare's Pedersen hash on the STARK curve (y^2 = x^3 + x + beta over the prime
 * 2^251 + 17 * 2^192 + 1), for the devnet's escape verifiers: H(a, b) is the x coordinate of
 * P0 + a_low * P1 + a_high * P2 + b_low * P3 + b_high * P4, where _low is a value's low 248 bits
 * and _high its top 4. The multiples are not computed here: table contracts (PedersenTable, three
 * per input, written by the devnet from src/devnet/exchange/pedersen-table.ts) hold, for each
 * 4-bit window w of an input, the points d * 16^w * P (d = 1..15), so a hash is one point addition
 * per non-zero window, made in Jacobian coordinates with one inversion at the end.
 */
library StarkPedersen {
    uint256 internal constant PRIME = 0x800000000000011000000000000000000000000000000000000000000000001;
    /// The shift point P0.
    uint256 internal constant P0_X = 0x49ee3eba8c1600700ee1b87eb599f16716b0b1022947733551fde4050ca6804;
    uint256 internal constant P0_Y = 0x3ca0cfe4b3bc6ddf346d49d06ea0ed34e621062c0e056c1d0405d266e10268a;
    /// One table contract: 21 windows of 15 affine points of two words each.
    uint256 internal constant PART_WORDS = 630;
    /// One input's table: 63 windows (62 for the low 248 bits, 1 for the top 4), in three contracts.
    uint256 internal constant TABLE_WORDS = 3 * PART_WORDS;

    /// One input's table, as words in memory (each contract's code after its leading STOP byte).
    function loadTable(address[3] memory parts) internal view returns (uint256[] memory words) {
        words = new uint256[](TABLE_WORDS);
        for (uint256 i = 0; i < 3; i++) {
            address part = parts[i];
            require(part.code.length == 1 + PART_WORDS * 32, "BAD_PEDERSEN_TABLE");
            assembly {
                extcodecopy(part, add(add(words, 0x20), mul(i, mul(PART_WORDS, 0x20))), 1, mul(PART_WORDS, 0x20))
            }
        }
    }

    /// H(a, b); both must be below PRIME (the callers check it, naming the row).
    function hash(
        uint256 a,
        uint256 b,
        uint256[] memory tableA,
        uint256[] memory tableB
    ) internal view returns (uint256) {
        uint256[3] memory point = [P0_X, P0_Y, uint256(1)];
        addBits(point, a, tableA);
        addBits(point, b, tableB);
        uint256 zInv = inverse(point[2]);
        return mulmod(point[0], mulmod(zInv, zInv, PRIME), PRIME);
    }

    /**
     * Adds to the Jacobian point (x, y, z), for each 4-bit window w of k with digit d > 0, the
     * table's point d * 16^w * P (entry 15 w + d - 1). The sum
     * reaching a table point's x (a doubling or the point at infinity) happens only for inputs
     * built from a discrete logarithm between the constant points: refused, as StarkWare's
     * reference refuses it.
     */
    function addBits(uint256[3] memory point, uint256 k, uint256[] memory table) private pure {
        bool degenerate;
        assembly {
            let x := mload(point)
            let y := mload(add(point, 0x20))
            let z := mload(add(point, 0x40))
            for {
                let window := add(table, 0x20)
            } k {
                k := shr(4, k)
                window := add(window, 0x3c0)
            } {
                let digit := and(k, 0xf)
                if digit {
                    let ptr := add(window, shl(6, sub(digit, 1)))
                    // Mixed addition (x, y, z) + (x2, y2, 1): h = x2 z^2 - x, r = y2 z^3 - y.
                    let t := mulmod(z, z, PRIME)
                    let h := addmod(mulmod(mload(ptr), t, PRIME), sub(PRIME, x), PRIME)
                    if iszero(h) {
                        degenerate := 1
                        break
                    }
                    let r := addmod(mulmod(mload(add(ptr, 0x20)), mulmod(z, t, PRIME), PRIME), sub(PRIME, y), PRIME)
                    z := mulmod(z, h, PRIME)
                    t := mulmod(h, h, PRIME)
                    h := mulmod(h, t, PRIME) // h^3
                    t := mulmod(x, t, PRIME) // x h^2
                    x := addmod(mulmod(r, r, PRIME), sub(PRIME, addmod(h, addmod(t, t, PRIME), PRIME)), PRIME)
                    y := addmod(mulmod(r, addmod(t, sub(PRIME, x), PRIME), PRIME), sub(PRIME, mulmod(y, h, PRIME)), PRIME)
                }
            }
            mstore(point, x)
            mstore(add(point, 0x20), y)
            mstore(add(point, 0x40), z)
        }
        require(!degenerate, "PEDERSEN_DEGENERATE_SUM");
    }

    /// z^(p-2) mod p through the modexp precompile (z is never 0: addBits refuses that).
    function inverse(uint256 z) private view returns (uint256 r) {
        bool ok;
        assembly {
            let m := mload(0x40)
            mstore(m, 0x20)
            mstore(add(m, 0x20), 0x20)
            mstore(add(m, 0x40), 0x20)
            mstore(add(m, 0x60), z)
            mstore(add(m, 0x80), sub(PRIME, 2))
            mstore(add(m, 0xa0), PRIME)
            ok := staticcall(gas(), 0x05, m, 0xc0, m, 0x20)
            r := mload(m)
        }
        require(ok, "MODEXP_FAILED");
    }
}

/// A Pedersen table as contract code: a STOP byte, then the words (so a call to it does nothing).
contract PedersenTable {
    constructor(bytes memory words) {
        bytes memory code = abi.encodePacked(bytes1(0x00), words);
        assembly {
            return(add(code, 0x20), mload(code))
        }
    }
}
