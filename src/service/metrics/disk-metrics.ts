/** The store's size and its file system's space, read at scrape time at most every refresh period. */
import { statfs } from "node:fs/promises";
import { directorySize } from "../../storage/store-size.js";
import { scrapedGauge, type Registers } from "./family.js";

const DEFAULT_REFRESH_MS = 30_000;

interface DiskReading {
  at: number;
  size?: number;
  free?: number;
  total?: number;
}

/** The last reading of `dataDir`, taken again once it is older than `refreshMs`; one walk at a time. */
class DiskReader {
  private last: DiskReading | undefined;
  private refreshing: Promise<void> | undefined;

  constructor(
    private readonly dataDir: string | undefined,
    private readonly refreshMs: number,
  ) {}

  async read(): Promise<DiskReading | undefined> {
    await this.refresh();
    return this.last;
  }

  private refresh(): Promise<void> {
    const dir = this.dataDir;
    if (!dir) return Promise.resolve();
    if (this.last && Date.now() - this.last.at < this.refreshMs) return Promise.resolve();
    this.refreshing ??= (async () => {
      const [size, fs] = await Promise.all([
        directorySize(dir).catch(() => undefined),
        statfs(dir).catch(() => undefined),
      ]);
      this.last = {
        at: Date.now(),
        size,
        free: fs ? fs.bavail * fs.bsize : undefined,
        total: fs ? fs.blocks * fs.bsize : undefined,
      };
    })().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }
}

export function diskMetrics(
  registers: Registers,
  dataDir: string | undefined,
  refreshMs = DEFAULT_REFRESH_MS,
) {
  const reader = new DiskReader(dataDir, refreshMs);
  const gauge = (name: string, help: string, pick: (d: DiskReading) => number | undefined) =>
    scrapedGauge(registers, name, help, async () => {
      const d = await reader.read();
      return d && pick(d);
    });
  return {
    storeSizeBytes: gauge(
      "store_size_bytes",
      "Disk space used by the store (data_dir), refreshed at most every 30 s",
      (d) => d.size,
    ),
    diskFreeBytes: gauge(
      "disk_free_bytes",
      "Free space (for unprivileged users) on the file system of data_dir",
      (d) => d.free,
    ),
    diskTotalBytes: gauge("disk_total_bytes", "Size of the file system of data_dir", (d) => d.total),
  };
}

export type DiskMetrics = ReturnType<typeof diskMetrics>;
