/* Shared by the addon's N-API bindings: a failed N-API call throws and returns from the binding. */
#ifndef DACD_NAPI_CALL_H
#define DACD_NAPI_CALL_H

#include <node_api.h>

#define NAPI_CALL(env, expr)                              \
  do {                                                    \
    if ((expr) != napi_ok) {                              \
      napi_throw_error((env), NULL, "N-API call failed"); \
      return NULL;                                        \
    }                                                     \
  } while (0)

#endif
