/** libuv's threadpool when UV_THREADPOOL_SIZE is not set. */
const LIBUV_DEFAULT_SIZE = 4;
/** libuv's own ceiling on UV_THREADPOOL_SIZE. */
const LIBUV_MAX_SIZE = 1024;

/**
 * The threadpool dacd's launcher (bin/dacd.js) asks libuv for when UV_THREADPOOL_SIZE is not set.
 * LevelDB's lookups run there, one at a time per thread, and a store larger than the page cache keeps
 * each thread waiting on the disk: a disk answers random reads faster the more it is asked at once.
 */
export const DACD_THREADPOOL_SIZE = 16;

/**
 * The size of this process's libuv threadpool, from UV_THREADPOOL_SIZE as libuv reads it (atoi,
 * 0 counting as 1, negative or over 1024 as 1024; unset: 4). libuv reads the variable once, when
 * the pool starts, which is before any of dacd's code runs: the launcher sets it, this only reads.
 */
export function threadpoolSize(env: Readonly<Record<string, string | undefined>>): number {
  const value = env.UV_THREADPOOL_SIZE;
  if (value === undefined) return LIBUV_DEFAULT_SIZE;
  const n = Number.parseInt(value, 10) || 0;
  if (n === 0) return 1;
  return n < 0 ? LIBUV_MAX_SIZE : Math.min(LIBUV_MAX_SIZE, n);
}
