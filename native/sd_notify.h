/* sd_notify's datagram, sent from the addon (sd_notify.c). */
#ifndef DACD_SD_NOTIFY_H
#define DACD_SD_NOTIFY_H

#include <node_api.h>

/** Registers sdNotify; 0 on failure. */
int sd_register(napi_env env, napi_value exports);

#endif
