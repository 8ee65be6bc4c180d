/**
 * Records for LevelDB tests: record i of a batch, its key in a tree record's shape (0x00 ‖ batch ‖
 * kind ‖ 32 bytes) and a 120-byte value, each from (batch, i) alone. The two functions use nothing
 * outside themselves, so that a test can hand their source to a child process.
 */
export const recordKey = (batch: number, i: number): Buffer => {
  const k = Buffer.alloc(38);
  k.writeUInt32BE(batch, 1);
  k[5] = 1;
  k.writeUInt32BE(i, 34);
  return k;
};

export const recordValue = (batch: number, i: number): Buffer => {
  const v = Buffer.alloc(120);
  for (let j = 0; j < v.length; j += 4)
    v.writeUInt32BE((Math.imul(i + 1, 2654435761) ^ Math.imul(j + batch, 40503)) >>> 0, j);
  return v;
};

/** A batch's first `count` records as puts for `db.batch`. */
export const recordPuts = (batch: number, count: number) =>
  Array.from({ length: count }, (_, i) => ({
    type: "put" as const,
    key: recordKey(batch, i),
    value: recordValue(batch, i),
  }));
