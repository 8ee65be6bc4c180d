/* Adds `recordFormat`, record_format.h's numbers, to an addon's exports; 0 on failure. */
#ifndef DACD_RECORD_FORMAT_NAPI_H
#define DACD_RECORD_FORMAT_NAPI_H

#include <node_api.h>

int rf_register(napi_env env, napi_value exports);

#endif
