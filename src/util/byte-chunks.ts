/** The size of each chunk that small arrays are carved from. */
const CHUNK = 64 * 1024;

/**
 * Small byte arrays carved from shared 64 KiB chunks: one view each instead of an ArrayBuffer
 * each. V8 gives a typed array of more than 64 bytes a backing store of its own (allocated, zeroed,
 * and tracked until the collector frees it), which costs far more than the view; a batch's trees
 * make tens of thousands of such records and node copies.
 *
 * Carved bytes are zero, as a new array's would be, and no byte is handed out twice, so an array
 * from here may be kept as long as needed. A chunk is freed with its last view: meant for arrays
 * that die with their neighbours (a batch's records), not for a few kept for long.
 */
export class ByteChunks {
  private chunk = new Uint8Array(0);
  private used = 0;

  /** `length` zero bytes (a view into the current chunk, or an array of its own if larger). */
  take(length: number): Uint8Array {
    if (length > CHUNK) return new Uint8Array(length);
    if (this.used + length > this.chunk.length) {
      this.chunk = new Uint8Array(CHUNK);
      this.used = 0;
    }
    const out = this.chunk.subarray(this.used, this.used + length);
    this.used += length;
    return out;
  }
}
