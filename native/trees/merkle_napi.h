/* Adds the Merkle update's functions (merkle_napi.c) to an addon's exports; 0 on failure. */
#ifndef DACD_MERKLE_NAPI_H
#define DACD_MERKLE_NAPI_H

#include <node_api.h>

int mt_register(napi_env env, napi_value exports);

#endif
