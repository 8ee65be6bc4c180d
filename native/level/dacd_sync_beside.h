// Included into LevelDB's db/db_impl.cc by leveldb-sync-beside.patch: a large
// synced write waits for its log's sync on a thread of its own while the writer puts its records
// into the memtable, instead of one after the other.
//
// Why: a batch's write carries every record the batch made (about 18 MiB for a W-spot batch).
// LevelDB appends it to the log, waits for the sync, and only then inserts the records into the
// memtable one at a time, all on the writer's thread; the claim waits for all of it while the
// machine's other cores have nothing to do. The sync and the memtable share nothing.
//
// Why this keeps LevelDB's guarantees:
// - The log is appended first, on the writer's thread, as LevelDB does: where that fails (a full
//   disk), nothing is in the memtable and LevelDB goes on as it always does, so a member whose disk
//   filled up resumes once space is freed.
// - Records in the memtable stay invisible until the writer publishes the write's last sequence
//   number (versions_->SetLastSequence), which it does only after the sync succeeded. Readers see a
//   snapshot at most that sequence, so nothing is read before it is synced.
// - Where the sync fails, the records are in the memtable already. The writer then does not
//   publish their sequence numbers, and records a background error as LevelDB does for a failed
//   sync: every later write fails and no flush or compaction runs, so the records are never read,
//   never written to a table, and gone at the next open (which recovers from the log alone).
// - A write whose thread cannot be started runs as LevelDB runs it.

#include <pthread.h>

#include "leveldb/env.h"
#include "leveldb/status.h"

namespace leveldb {
namespace dacd {

// Below this, a write is synced as LevelDB syncs it: starting a thread would cost more than it saves.
static const size_t kSyncBesideMinBytes = 1 << 20;

struct SyncBeside {
  WritableFile* file;
  Status status;
};

static void* SyncBesideRun(void* arg) {
  SyncBeside* job = static_cast<SyncBeside*>(arg);
  job->status = job->file->Sync();
  return NULL;
}

// Starts `job` on a thread of its own for a write of `bytes`: true when it did (join it with
// pthread_join), false when the write is small or no thread could be started.
static bool StartSyncBeside(SyncBeside* job, size_t bytes, pthread_t* thread) {
  if (bytes < kSyncBesideMinBytes) return false;
  return pthread_create(thread, NULL, SyncBesideRun, job) == 0;
}

}  // namespace dacd
}  // namespace leveldb
