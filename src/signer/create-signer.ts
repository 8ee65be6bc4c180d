import { DacdError } from "../errors.js";
import { EthSigner, isValidEthPrivateKey } from "./eth-signer.js";
import type { Signer } from "./signer.js";
import { StarkSigner, isValidStarkPrivateKey } from "./stark-signer.js";

export type ChainKind = Signer["chainKind"];

/** The signer for the base-chain kind; refuses (CONFIG) a key outside that curve's valid range. */
export function createSigner(chainKind: ChainKind, privateKey: Uint8Array): Signer {
  switch (chainKind) {
    case "ethereum":
      if (!isValidEthPrivateKey(privateKey))
        throw new DacdError(
          "CONFIG",
          "the member key is not a valid secp256k1 private key (chain kind ethereum)",
        );
      return new EthSigner(privateKey);
    case "starknet":
      if (!isValidStarkPrivateKey(privateKey))
        throw new DacdError(
          "CONFIG",
          "the member key is not a valid STARK private key (chain kind starknet: need 0 < k < curve order)",
        );
      return new StarkSigner(privateKey);
    default:
      throw new DacdError("CONFIG", `unknown chain kind ${JSON.stringify(chainKind as unknown)}`);
  }
}
