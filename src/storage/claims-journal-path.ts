import { basename, dirname, join } from "node:path";

// Apart from the journal itself, so that a command can name the path without loading the journal's
// reader and the signature checks it imports.

/** Default place of the journal: a directory beside data_dir, `<data_dir>-claims/claims.journal`. */
export function defaultClaimsJournalPath(dataDir: string): string {
  return join(dirname(dataDir), `${basename(dataDir)}-claims`, "claims.journal");
}

/** The journal's path: `claims_journal_path`, else the default beside data_dir. */
export function claimsJournalPathOf(config: { dataDir: string; claimsJournalPath?: string }): string {
  return config.claimsJournalPath ?? defaultClaimsJournalPath(config.dataDir);
}
