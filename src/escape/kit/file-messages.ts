/** What the kit writer (writer.ts) and its thread (file-worker.ts) say to each other. */

export interface ShardSummary {
  readonly files: number;
  /** SHA-256 of the shard's list: `<sha256 of the file>  <id>.json` lines in ascending id order. */
  readonly sha256: string;
}

/** Proof files of one tree, in ascending id order: file i is `bytes[ends[i-1] .. ends[i])`. */
export interface FileBatch {
  readonly kind: "files";
  readonly tree: string;
  readonly ids: readonly string[];
  readonly ends: readonly number[];
  readonly bytes: ArrayBuffer;
}

export type WriterRequest = FileBatch | { readonly kind: "summary" };

export type WorkerReply =
  /** A batch is done with (written, or dropped after a failure); its buffer comes back for reuse. */
  | { readonly kind: "written"; readonly bytes: ArrayBuffer }
  | { readonly kind: "failed"; readonly message: string; readonly code?: string }
  | {
      readonly kind: "summary";
      readonly files: number;
      readonly shards: Record<string, ShardSummary>;
    };
