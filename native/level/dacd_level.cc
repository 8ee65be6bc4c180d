// dacd's additions to classic-level's binding (classic-level-binding.patch includes this file in a
// copy of classic-level's binding.cc, before its NAPI_INIT, and exports batch_put_records,
// db_get_packed, set_mapped_tables and set_random_reads).
//
// set_mapped_tables(limit): how many table files LevelDB memory-maps (the rest are read with
// pread); see the comment above it.
//
// set_random_reads(): every table file, open or opened later, reads without read-ahead from its
// next read on (leveldb-random-reads.patch); see the comment above it.
//
// It also gives LevelDB a hardware CRC32C (see leveldb::port::AcceleratedCRC32C below). The build
// patch also drops classic-level's Bloom filter (native/README.md says why).
//
// batch_put_records(batch, head, hashes, records, starts, ends, order, from, to): puts into a
// chained batch, for k in [from, to) and i = order[k], the key head ‖ hashes[32i, 32i + 32) with
// the value records[starts[i], ends[i]). It is the chained batch's put in one call instead of one
// per record: classic-level's put copies its key and value into fresh allocations before
// WriteBatch::Put copies them again, which for a batch's 170k records is most of the main thread's
// time outside the tree walks. Every index is checked before anything is put, so a bad argument
// throws a RangeError and leaves the batch as it was.

static bool DacdUint8Array(napi_env env, napi_value value, const uint8_t** data, size_t* length) {
  napi_typedarray_type type;
  void* raw;
  if (napi_get_typedarray_info(env, value, &type, length, &raw, NULL, NULL) != napi_ok ||
      type != napi_uint8_array) {
    return false;
  }
  *data = static_cast<const uint8_t*>(raw);
  return true;
}

static bool DacdUint32Array(napi_env env, napi_value value, const uint32_t** data, size_t* length) {
  napi_typedarray_type type;
  void* raw;
  if (napi_get_typedarray_info(env, value, &type, length, &raw, NULL, NULL) != napi_ok ||
      type != napi_uint32_array) {
    return false;
  }
  *data = static_cast<const uint32_t*>(raw);
  return true;
}

NAPI_METHOD(batch_put_records) {
  NAPI_ARGV(9);
  NAPI_BATCH_CONTEXT();

  const uint8_t *head, *hashes, *records;
  const uint32_t *starts, *ends, *order;
  size_t headLength, hashesLength, recordsLength, startsLength, endsLength, orderLength;
  uint32_t from, to;
  if (!DacdUint8Array(env, argv[1], &head, &headLength) ||
      !DacdUint8Array(env, argv[2], &hashes, &hashesLength) ||
      !DacdUint8Array(env, argv[3], &records, &recordsLength) ||
      !DacdUint32Array(env, argv[4], &starts, &startsLength) ||
      !DacdUint32Array(env, argv[5], &ends, &endsLength) ||
      !DacdUint32Array(env, argv[6], &order, &orderLength) ||
      napi_get_value_uint32(env, argv[7], &from) != napi_ok ||
      napi_get_value_uint32(env, argv[8], &to) != napi_ok) {
    napi_throw_type_error(env, NULL,
                          "batch_put_records(batch, head: Uint8Array, hashes: Uint8Array, records: "
                          "Uint8Array, starts: Uint32Array, ends: Uint32Array, order: Uint32Array, "
                          "from: number, to: number)");
    return NULL;
  }

  char key[64];
  if (headLength > sizeof key - 32 || from > to || to > orderLength) {
    napi_throw_range_error(env, NULL, "batch_put_records: key head longer than 32 bytes, or from/to outside order");
    return NULL;
  }
  const size_t records_named = startsLength < endsLength ? startsLength : endsLength;
  for (uint32_t k = from; k < to; k++) {
    const uint32_t i = order[k];
    if (i >= records_named || (static_cast<size_t>(i) + 1) * 32 > hashesLength || starts[i] > ends[i] ||
        ends[i] > recordsLength) {
      napi_throw_range_error(env, NULL, "batch_put_records: a record's hash or bytes lie outside the buffers");
      return NULL;
    }
  }

  memcpy(key, head, headLength);
  for (uint32_t k = from; k < to; k++) {
    const uint32_t i = order[k];
    memcpy(key + headLength, hashes + static_cast<size_t>(i) * 32, 32);
    batch->Put(leveldb::Slice(key, headLength + 32),
               leveldb::Slice(reinterpret_cast<const char*>(records) + starts[i], ends[i] - starts[i]));
  }

  NAPI_RETURN_UNDEFINED();
}

// db_get_packed(db, keys, keyLength, fillCache, snapshot): looks up the keys packed one after the
// other in `keys` (each keyLength bytes), on a libuv thread as classic-level's getMany does, and
// resolves with [values, ends]: the values found, one after the other in one Buffer, and for key i
// the end of its value in it (0xFFFFFFFF where the key is not found). classic-level's getMany takes
// an array of keys and answers an array of Buffers, one allocation and one JavaScript object per
// record (about 38,000 per W-spot batch), which the store then copied into one buffer anyway.

static const uint32_t kDacdNotFound = 0xFFFFFFFFu;

struct DacdAppendSink : public leveldb::ValueSink {
  explicit DacdAppendSink(std::string* out) : out_(out) {}
  void assign(const char* s, size_t n) override { out_->append(s, n); }

 private:
  std::string* out_;
};

struct DacdGetPackedWorker final : public PriorityWorker {
  DacdGetPackedWorker(napi_env env, Database* database, std::string keys, size_t keyLength,
                      napi_deferred deferred, const bool fillCache, ExplicitSnapshot* snapshot)
      : PriorityWorker(env, database, deferred, "dacd.get.packed"),
        keys_(std::move(keys)),
        keyLength_(keyLength) {
    options_.fill_cache = fillCache;
    if (snapshot == NULL) {
      implicitSnapshot_ = database->NewSnapshot();
      options_.snapshot = implicitSnapshot_;
    } else {
      implicitSnapshot_ = NULL;
      options_.snapshot = snapshot->nut;
    }
  }

  void DoExecute() override {
    const size_t count = keys_.size() / keyLength_;
    ends_.reserve(count);
    DacdAppendSink sink(&values_);
    for (size_t i = 0; i < count; i++) {
      const size_t before = values_.size();
      leveldb::Status status = database_->Get(options_, leveldb::Slice(keys_.data() + i * keyLength_, keyLength_), sink);
      if (status.ok() && values_.size() < kDacdNotFound) {
        ends_.push_back(static_cast<uint32_t>(values_.size()));
      } else if (status.IsNotFound()) {
        values_.resize(before);
        ends_.push_back(kDacdNotFound);
      } else {
        SetStatus(status.ok() ? leveldb::Status::Corruption("dacd: 4 GiB or more of values in one read") : status);
        break;
      }
    }
    if (implicitSnapshot_) database_->ReleaseSnapshot(implicitSnapshot_);
  }

  void HandleOKCallback(napi_env env, napi_deferred deferred) override {
    napi_value values, endsBuffer, ends, result;
    void* endsData;
    const size_t count = ends_.size();
    if (napi_create_buffer_copy(env, values_.size(), values_.data(), NULL, &values) != napi_ok ||
        napi_create_arraybuffer(env, count * sizeof(uint32_t), &endsData, &endsBuffer) != napi_ok ||
        napi_create_typedarray(env, napi_uint32_array, count, endsBuffer, 0, &ends) != napi_ok ||
        napi_create_array_with_length(env, 2, &result) != napi_ok) {
      napi_value error;
      napi_value message;
      napi_create_string_utf8(env, "dacd: could not allocate the results of a read", NAPI_AUTO_LENGTH, &message);
      napi_create_error(env, NULL, message, &error);
      napi_reject_deferred(env, deferred, error);
      return;
    }
    if (count > 0) memcpy(endsData, ends_.data(), count * sizeof(uint32_t));
    napi_set_element(env, result, 0, values);
    napi_set_element(env, result, 1, ends);
    napi_resolve_deferred(env, deferred, result);
  }

 private:
  leveldb::ReadOptions options_;
  const std::string keys_;
  const size_t keyLength_;
  std::string values_;
  std::vector<uint32_t> ends_;
  const leveldb::Snapshot* implicitSnapshot_;
};

NAPI_METHOD(db_get_packed) {
  NAPI_ARGV(5);
  NAPI_DB_CONTEXT();

  const uint8_t* keys;
  size_t keysLength;
  uint32_t keyLength;
  bool fillCache;
  if (!DacdUint8Array(env, argv[1], &keys, &keysLength) ||
      napi_get_value_uint32(env, argv[2], &keyLength) != napi_ok ||
      napi_get_value_bool(env, argv[3], &fillCache) != napi_ok) {
    napi_throw_type_error(env, NULL,
                          "db_get_packed(db, keys: Uint8Array, keyLength: number, fillCache: boolean, snapshot)");
    return NULL;
  }
  if (keyLength == 0 || keysLength % keyLength != 0 || keysLength / keyLength >= kDacdNotFound) {
    napi_throw_range_error(env, NULL, "db_get_packed: the keys are not a whole number of keyLength-byte keys");
    return NULL;
  }
  ExplicitSnapshot* snapshot = NULL;
  napi_get_value_external(env, argv[4], (void**)&snapshot);

  NAPI_PROMISE();
  DacdGetPackedWorker* worker = new DacdGetPackedWorker(
      env, database, std::string(reinterpret_cast<const char*>(keys), keysLength), keyLength, deferred, fillCache,
      snapshot);
  worker->Queue(env);
  return promise;
}

// LevelDB's POSIX Env memory-maps at most a fixed number of table files (1000 on 64-bit hosts)
// and reads the others with pread. Every page of a mapped table that a lookup touches stays in
// the process's RSS (clean, but counted by monitoring and by the OOM killer's score), so on a
// large store the mapped tables, not the heap, make up most of the RSS. LevelDB lets only its own
// tests change the number (EnvPosixTestHelper, private, friend class EnvPosixTest, which is not
// part of the library): this class of that name is how the binding reaches it. The number is read
// once, when the first database opens the process-wide Env, so the caller sets it before that.
#include "util/env_posix_test_helper.h"
namespace leveldb {
class EnvPosixTest {
 public:
  static void SetMappedTables(int limit) { EnvPosixTestHelper::SetReadOnlyMMapLimit(limit); }
};
}  // namespace leveldb

NAPI_METHOD(set_mapped_tables) {
  NAPI_ARGV(1);
  int32_t limit;
  if (napi_get_value_int32(env, argv[0], &limit) != napi_ok || limit < 0) {
    napi_throw_range_error(env, NULL, "set_mapped_tables(limit): a whole number of tables, 0 or more");
    return NULL;
  }
  leveldb::EnvPosixTest::SetMappedTables(limit);
  return NULL;
}

// A lookup below dacd's node cache reads one block at a random place in the store. Where the store
// is larger than the page cache, the kernel's read-ahead around that block (tens of KiB) brings in
// neighbours no lookup asks for and evicts pages that another lookup needs. A walk over whole trees
// (the cache's warm-up) reads neighbouring blocks and gains from read-ahead, so the caller turns it
// off once such walks are done; it stays off for the rest of the process.
#include <atomic>
namespace leveldb {
extern std::atomic<bool> dacd_random_reads;
}

NAPI_METHOD(set_random_reads) {
  leveldb::dacd_random_reads.store(true, std::memory_order_relaxed);
  return NULL;
}

// LevelDB checksums every record it logs and every block it writes to a table with CRC32C, and
// asks port::AcceleratedCRC32C first, falling back to its table-driven code when that answers 0.
// The LevelDB classic-level bundles compiles that function empty (it would need -msse4.2 on one
// file, which its build does not do), which leaves every checksum of a batch's log write and
// table flush to the table-driven code. This definition, using the CPU's crc32 instruction where
// it has one, is linked before LevelDB's static library, so the linker never pulls in LevelDB's
// empty one; LevelDB still checks its answer against a known checksum once (crc32c.cc,
// CanAccelerateCRC32C) and keeps its own code if they differ.
#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>
namespace leveldb {
namespace port {
__attribute__((target("sse4.2"))) static uint32_t DacdCrc32cSse42(uint32_t crc, const char* buf, size_t size) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(buf);
  uint64_t l = crc ^ 0xffffffffu;
  for (; size >= 8; size -= 8, p += 8) {
    uint64_t word;
    memcpy(&word, p, 8);
    l = _mm_crc32_u64(l, word);
  }
  uint32_t c = static_cast<uint32_t>(l);
  for (; size > 0; size--) c = _mm_crc32_u8(c, *p++);
  return c ^ 0xffffffffu;
}

uint32_t AcceleratedCRC32C(uint32_t crc, const char* buf, size_t size) {
  static const bool have = (__builtin_cpu_init(), __builtin_cpu_supports("sse4.2"));
  return have ? DacdCrc32cSse42(crc, buf, size) : 0;
}
}  // namespace port
}  // namespace leveldb
#endif
