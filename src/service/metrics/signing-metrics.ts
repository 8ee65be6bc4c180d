/** Batches left unsigned for a reason outside the batch: a conflicting claim, a failing key token. */
import { Counter } from "prom-client";
import { PREFIX, type Registers } from "./family.js";

export function signingMetrics(registers: Registers) {
  return {
    conflictingClaims: new Counter({
      name: `${PREFIX}conflicting_claims_total`,
      help: "Claims refused because the claims journal holds another claim for the batch id (the store lost or replaced batches)",
      registers,
    }),
    signerErrors: new Counter({
      name: `${PREFIX}signer_errors_total`,
      help: "Failed calls to the member key's PKCS#11 token (signing, reopening the session): the batch is left unsigned and retried",
      registers,
    }),
  };
}
