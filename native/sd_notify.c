/*
 * sd_notify for the daemon (src/service/systemd.ts): one datagram to systemd's NOTIFY_SOCKET, sent
 * from dacd's own process. Node has no Unix datagram sockets; running `systemd-notify` instead
 * forks the signing process, and a fork leaves every page of it copy-on-write, so the batch after
 * each watchdog ping takes a page fault for every page it writes.
 */
#include "sd_notify.h"

#ifdef __linux__
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "napi_call.h"
#include "napi_util.h"

/* sdNotify(socket, message): sends `message` to the socket NOTIFY_SOCKET names ("@…": abstract). */
static napi_value sd_notify_js(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  if (!nu_args(env, info, 2, argv)) return NULL;
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  size_t path_len = 0;
  char message[4096];
  size_t message_len = 0;
  if (napi_get_value_string_utf8(env, argv[0], addr.sun_path, sizeof addr.sun_path, &path_len) != napi_ok ||
      napi_get_value_string_utf8(env, argv[1], message, sizeof message, &message_len) != napi_ok) {
    napi_throw_type_error(env, NULL, "sdNotify(socket: string, message: string)");
    return NULL;
  }
  /* A string that filled the buffer may have been cut short: refuse rather than send elsewhere. */
  if (path_len == 0 || path_len >= sizeof addr.sun_path - 1 || message_len >= sizeof message - 1) {
    napi_throw_range_error(env, "ERR_SD_NOTIFY", "NOTIFY_SOCKET or the message is too long (or empty)");
    return NULL;
  }
  if (addr.sun_path[0] != '/' && addr.sun_path[0] != '@') {
    napi_throw_range_error(env, "ERR_SD_NOTIFY", "NOTIFY_SOCKET is neither a path nor an abstract name (@...)");
    return NULL;
  }
  /* An abstract name's address is its bytes after a leading NUL, without a terminating one. */
  socklen_t addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + path_len);
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';
  else addr_len += 1;

  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  int err = 0;
  if (fd < 0) err = errno;
  else {
    if (sendto(fd, message, message_len, MSG_NOSIGNAL, (struct sockaddr *)&addr, addr_len) < 0) err = errno;
    close(fd);
  }
  if (err) {
    char text[256];
    snprintf(text, sizeof text, "sd_notify: %s", strerror(err));
    napi_throw_error(env, "ERR_SD_NOTIFY", text);
    return NULL;
  }
  return nu_null(env);
}

int sd_register(napi_env env, napi_value exports) {
  static const nu_named_fn fns[] = {{"sdNotify", sd_notify_js}};
  return nu_register_all(env, exports, fns, sizeof fns / sizeof fns[0]);
}

#else
/* Elsewhere there is no systemd: nothing to register (systemd.ts then has no native sender). */
int sd_register(napi_env env, napi_value exports) {
  (void)env;
  (void)exports;
  return 1;
}
#endif
