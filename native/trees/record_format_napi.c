/*
 * `recordFormat`: the record layout the native walks and the node cache are compiled with
 * (record_format.h), so that a test can hold it against src/storage/records/node-record.ts.
 */
#include "record_format_napi.h"

#include <stddef.h>
#include <stdint.h>

#include "record_format.h"

int rf_register(napi_env env, napi_value exports) {
  static const struct {
    const char *name;
    uint32_t value;
  } numbers[] = {
      {"nodeFormat", REC_NODE_FORMAT},
      {"hashBytes", REC_HASH_BYTES},
      {"genBytes", REC_GEN_BYTES},
      {"binaryLength", REC_BINARY_LENGTH},
      {"binaryGensAt", REC_BINARY_GENS_AT},
      {"edgePathAt", REC_EDGE_PATH_AT},
      {"edgeLengthAt", REC_EDGE_LENGTH_AT},
      {"edgeHeadLength", REC_EDGE_HEAD_LENGTH},
      {"edgeLength", REC_EDGE_LENGTH},
      {"checkpointStep", REC_CHECKPOINT_STEP},
      {"maxCachedLength", REC_MAX_CACHED_LENGTH},
  };
  napi_value format, v;
  if (napi_create_object(env, &format) != napi_ok) return 0;
  for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
    if (napi_create_uint32(env, numbers[i].value, &v) != napi_ok ||
        napi_set_named_property(env, format, numbers[i].name, v) != napi_ok)
      return 0;
  }
  return napi_object_freeze(env, format) == napi_ok && napi_set_named_property(env, exports, "recordFormat", format) == napi_ok;
}
