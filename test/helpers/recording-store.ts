import { MemoryNodeStore } from "../../src/storage/memory-store.js";
import type { NodeSource } from "../../src/storage/records/node-source.js";

export const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");

/** A store that also takes `remember` calls, noting each as text for comparing tree walks. */
export class RecordingStore implements NodeSource {
  readonly memory = new MemoryNodeStore();
  readonly rememberedLevels = 9;
  remembered: string[] = [];

  getNodes(hashes: readonly Uint8Array[], gens: ArrayLike<number>): Promise<(Uint8Array | undefined)[]> {
    return this.memory.getNodes(hashes, gens);
  }

  remember(
    tree: string,
    depth: number,
    index: number,
    hash: Uint8Array,
    gen: number,
    record: Uint8Array,
  ): void {
    this.remembered.push(`${tree} ${depth} ${index} ${hex(hash)} ${gen} ${hex(record)}`);
  }
}
