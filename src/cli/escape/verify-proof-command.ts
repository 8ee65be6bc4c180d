import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import { DacdError } from "../../errors.js";
import type { Proof } from "../../escape/proof.js";
import { EXIT } from "../exit-codes.js";
import { printJson } from "../output.js";

/** `dacd verify-proof`: a proof of either format checked against its root, with no store. */
export function registerVerifyProofCommand(program: Command): void {
  program
    .command("verify-proof <file>")
    .description(
      "check a proof from `dacd proof` (either format) against its root, with no store; exit 0 valid, 1 invalid, 2 unreadable",
    )
    .option("--root <hex>", "the root the proof must be for (e.g. from the base chain)")
    .action(async (file: string, opts: { root?: string }) => {
      const proof = await readProof(file);
      const [{ isOnchainFormat, verifyOnchainProof }, { verifyProof }, { commandEngine }] = await Promise.all(
        [
          import("../../escape/onchain/check.js"),
          import("../../escape/proof.js"),
          import("../command-engine.js"),
        ],
      );
      const engine = commandEngine();
      try {
        const verdict = isOnchainFormat(proof)
          ? await verifyOnchainProof(engine, proof, opts.root)
          : await verifyProof(engine, proof, opts.root);
        printJson(verdict);
        process.exitCode = verdict.valid ? EXIT.OK : EXIT.INVALID;
      } finally {
        await engine.close?.();
      }
    });
}

/** The proof in `file` ("-": standard input). */
async function readProof(file: string): Promise<Proof> {
  try {
    return JSON.parse(await readFile(file === "-" ? "/dev/stdin" : file, "utf8")) as Proof;
  } catch (err) {
    // Not a verdict on the proof: the command could not run.
    throw new DacdError("STORE", `cannot read the proof ${file}: ${(err as Error).message}`);
  }
}
