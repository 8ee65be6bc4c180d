/*
 * dacd's native addon (target dacd_native in binding.gyp): one build and one load for its jobs,
 * each of which adds its own functions to the exports:
 *   - the Pedersen engine (pedersen/pedersen_napi.c);
 *   - the tree walks: the Patricia and Merkle updates (trees/patricia_napi.c, trees/merkle_napi.c)
 *     and the record layout they use (trees/record_format_napi.c);
 *   - the node cache the walks consult (trees/node_cache_napi.c);
 *   - systemd's notifications (sd_notify.c).
 */
#include <node_api.h>

#include "pedersen/pedersen_napi.h"
#include "sd_notify.h"
#include "trees/merkle_napi.h"
#include "trees/node_cache_napi.h"
#include "trees/patricia_napi.h"
#include "trees/record_format_napi.h"

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  if (!ped_register(env, exports) || !rf_register(env, exports) || !pt_register(env, exports) ||
      !mt_register(env, exports) || !nc_register(env, exports) || !sd_register(env, exports))
    return NULL;
  return exports;
}
