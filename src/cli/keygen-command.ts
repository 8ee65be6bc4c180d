import { Option, type Command } from "commander";
import { keygenCommand } from "./keygen.js";

export function registerKeygenCommand(program: Command): void {
  program
    .command("keygen")
    .description(
      "generate a new member key (mode 0600, never overwriting) and print its address: a V3 keystore " +
        "whose password is asked twice at the terminal or read from --password-file, or with --raw a hex key file",
    )
    .requiredOption("--out <file>", "key file to create (never overwritten)")
    .option("--password-file <file>", "file holding the keystore password (for scripts; else asked)")
    .addOption(
      new Option("--raw", "write the key as hex, unencrypted (no password)").conflicts("passwordFile"),
    )
    .addOption(
      new Option("--kdf <kdf>", "the keystore's key derivation")
        .choices(["scrypt", "pbkdf2"])
        .default("scrypt"),
    )
    .action(async (opts: { out: string; passwordFile?: string; raw?: boolean; kdf: "scrypt" | "pbkdf2" }) => {
      await keygenCommand(opts);
    });
}
