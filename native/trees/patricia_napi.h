/* Adds the Patricia update's functions (patricia_napi.c) to an addon's exports; 0 on failure. */
#ifndef DACD_PATRICIA_NAPI_H
#define DACD_PATRICIA_NAPI_H

#include <node_api.h>

int pt_register(napi_env env, napi_value exports);

#endif
