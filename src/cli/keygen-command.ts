import type { Command } from "commander";
import { keygenCommand } from "./keygen.js";

export function registerKeygenCommand(program: Command): void {
  program
    .command("keygen")
    .description("generate a new member key as an Ethereum V3 keystore (mode 0600) and print its address")
    .requiredOption("--out <file>", "keystore file to create (never overwritten)")
    .requiredOption("--password-file <file>", "file holding the keystore password")
    .option("--kdf <kdf>", "scrypt | pbkdf2", "scrypt")
    .action(async (opts: { out: string; passwordFile: string; kdf: "scrypt" | "pbkdf2" }) => {
      await keygenCommand({ out: opts.out, passwordFile: opts.passwordFile, kdf: opts.kdf });
    });
}
