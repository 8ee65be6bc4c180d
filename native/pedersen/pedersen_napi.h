/* Adds the Pedersen engine's functions (pedersen_napi.c) to an addon's exports; 0 on failure. */
#ifndef DACD_PEDERSEN_NAPI_H
#define DACD_PEDERSEN_NAPI_H

#include <node_api.h>

int ped_register(napi_env env, napi_value exports);

#endif
