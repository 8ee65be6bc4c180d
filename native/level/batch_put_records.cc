// dacd's addition to classic-level's binding (scripts/build-level.mjs inserts this file into a
// copy of classic-level's binding.cc, before its NAPI_INIT, and exports the function).
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

