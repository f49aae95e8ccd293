/*
 * A stand-in libibverbs.so.1 (SONAME libibverbs.so.1) for the exporter's tests: a child process
 * started with LD_LIBRARY_PATH at native/build/fake-verbs loads it instead of the real one.
 * It exports the symbols native/reader/verbs.c resolves, with the real ones' signatures and
 * struct layouts (rdma-core libibverbs/verbs.h, verbs.c: see src/sources/verbs/layout.ts), and
 * answers from its environment:
 *   FAKE_IBV_DEVICES  "mlx5_0:1,mlx5_1:2": devices and their port counts (default "mlx5_0:1");
 *                     empty: no device; FAKE_IBV_LIST_ERRNO=38: the list fails with ENOSYS
 *   FAKE_IBV_DEVICES_FILE  a file whose text replaces FAKE_IBV_DEVICES, read again at each
 *                     ibv_get_device_list (a missing file: no device), so that a test adds and
 *                     deletes devices under a running process; an opened context keeps
 *                     answering after its device left the list, as rxe's does while
 *                     `rdma link delete` waits for it to be closed
 *   FAKE_IBV_STALL    "mlx5_1/1": ibv_query_port of this port reads a byte from the FIFO
 *                     FAKE_IBV_STALL_FIFO (opened O_RDWR) while the file FIFO.armed exists;
 *                     "list": ibv_get_device_list does
 *   FAKE_IBV_OPEN_ERRNO=13: ibv_open_device fails with that errno (EACCES on /dev/infiniband)
 *   FAKE_IBV_NO_GID_TABLE=1: _ibv_query_gid_table fails (EOPNOTSUPP), as before rdma-core 32
 *   FAKE_IBV_NDEV_IFINDEX=N: the GIDs' netdev (ndev_ifindex; default 0, none)
 *   FAKE_IBV_LOG      a file that gets one line per open, close, stall and its return, and
 *                     "used after close" should a closed context be queried
 * Every port answers as a RoCE v2 100 Gb/s port: ACTIVE, LinkUp, MTU 4096, 4X EDR, Ethernet,
 * four GIDs (RoCE v1 and v2 of fe80::N and ::ffff:10.0.0.N).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define MAX_FAKE 16
#define GID_TBL_LEN 4

struct fake_device {
  char name[64];
  int ports;
};

/* A context has its own copy of the device: the list it was opened from is freed, and the next one may differ. */
struct fake_ctx {
  struct fake_device dev;
  int closed;
};

/* What ibv_get_device_list returns: the pointers, NULL-terminated, then the devices they point to. */
struct fake_list {
  struct fake_device *list[MAX_FAKE + 1];
  struct fake_device devices[MAX_FAKE];
};

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...) {
  const char *file = getenv("FAKE_IBV_LOG");
  if (!file) return;
  FILE *f = fopen(file, "a");
  if (!f) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
  fclose(f);
}

/* `me` is "DEVICE/PORT" (ibv_query_port) or "list" (ibv_get_device_list). */
static void stall_if_armed(const char *me) {
  const char *which = getenv("FAKE_IBV_STALL");
  const char *fifo = getenv("FAKE_IBV_STALL_FIFO");
  if (!which || !fifo || strcmp(which, me) != 0) return;
  char armed[4096];
  snprintf(armed, sizeof armed, "%s.armed", fifo);
  if (access(armed, F_OK) != 0) return;
  say("stall %s", me);
  int fd = open(fifo, O_RDWR);
  char byte;
  if (fd >= 0) {
    while (read(fd, &byte, 1) < 0 && errno == EINTR) {}
    close(fd);
  }
  say("returned %s", me);
}

/* The device list's text: FAKE_IBV_DEVICES_FILE's content when it is set, else FAKE_IBV_DEVICES. */
static void device_spec(char *buf, size_t size) {
  const char *file = getenv("FAKE_IBV_DEVICES_FILE");
  if (!file) {
    const char *spec = getenv("FAKE_IBV_DEVICES");
    snprintf(buf, size, "%s", spec ? spec : "mlx5_0:1");
    return;
  }
  buf[0] = 0;
  FILE *f = fopen(file, "r");
  if (!f) return;
  size_t n = fread(buf, 1, size - 1, f);
  fclose(f);
  buf[n] = 0;
  buf[strcspn(buf, "\n")] = 0;
}

struct fake_device **ibv_get_device_list(int *num) {
  stall_if_armed("list");
  const char *fail = getenv("FAKE_IBV_LIST_ERRNO");
  if (fail) {
    errno = atoi(fail);
    return NULL;
  }
  struct fake_list *l = calloc(1, sizeof *l);
  if (!l) return NULL;
  char buf[1024];
  device_spec(buf, sizeof buf);
  int n = 0;
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && n < MAX_FAKE; tok = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(tok, ':');
    l->devices[n].ports = colon ? atoi(colon + 1) : 1;
    if (colon) *colon = 0;
    snprintf(l->devices[n].name, sizeof l->devices[n].name, "%s", tok);
    l->list[n] = &l->devices[n];
    n++;
  }
  if (num) *num = n;
  return l->list; /* the first member: the address of the whole */
}

void ibv_free_device_list(struct fake_device **l) { free(l); }

const char *ibv_get_device_name(struct fake_device *d) { return d->name; }

struct fake_ctx *ibv_open_device(struct fake_device *d) {
  const char *fail = getenv("FAKE_IBV_OPEN_ERRNO");
  if (fail) {
    errno = atoi(fail);
    return NULL;
  }
  struct fake_ctx *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->dev = *d;
  say("open %s", d->name);
  return c;
}

int ibv_close_device(struct fake_ctx *c) {
  say("close %s", c->dev.name);
  c->closed = 1; /* kept, so a later use is seen rather than undefined */
  return 0;
}

static int usable(struct fake_ctx *c) {
  if (!c->closed) return 1;
  say("used after close %s", c->dev.name);
  return 0;
}

int ibv_query_device(struct fake_ctx *c, uint8_t *attr) {
  if (!usable(c)) return EBADF;
  memset(attr, 0, 232);
  memcpy(attr, "1.0", 4); /* fw_ver */
  attr[227] = (uint8_t)c->dev.ports;
  return 0;
}


/* The exported ibv_query_port@@IBVERBS_1.1: struct _compat_ibv_port_attr, 48 bytes. */
int ibv_query_port(struct fake_ctx *c, uint8_t port, uint8_t *a) {
  char me[80];
  snprintf(me, sizeof me, "%s/%d", c->dev.name, port);
  stall_if_armed(me);
  if (!usable(c)) return EBADF;
  if (port < 1 || port > c->dev.ports) return EINVAL;
  memset(a, 0, 48);
  uint32_t u;
  u = 4;
  memcpy(a + 0, &u, 4); /* state IBV_PORT_ACTIVE */
  u = 5;
  memcpy(a + 4, &u, 4); /* max_mtu IBV_MTU_4096 */
  u = 5;
  memcpy(a + 8, &u, 4); /* active_mtu */
  int32_t len = GID_TBL_LEN;
  memcpy(a + 12, &len, 4);
  u = 0x04010000;
  memcpy(a + 16, &u, 4); /* port_cap_flags */
  u = 0x40000000;
  memcpy(a + 20, &u, 4); /* max_msg_sz */
  uint16_t pk = 1;
  memcpy(a + 32, &pk, 2); /* pkey_tbl_len */
  a[39] = 4;              /* max_vl_num */
  a[43] = 2;              /* active_width 4X */
  a[44] = 32;             /* active_speed EDR (25 Gb/s per lane) */
  a[45] = 5;              /* phys_state LinkUp */
  a[46] = 2;              /* link_layer Ethernet */
  return 0;
}

/* struct ibv_gid_entry: gid[16], gid_index, port_num, gid_type, ndev_ifindex. */
static void gid_entry(uint8_t *e, int port, uint32_t index) {
  memset(e, 0, 32);
  if (index < 2) {
    e[0] = 0xfe, e[1] = 0x80, e[15] = (uint8_t)port;
  } else {
    e[10] = 0xff, e[11] = 0xff, e[12] = 10, e[15] = (uint8_t)port;
  }
  uint32_t type = index % 2 == 0 ? 1 : 2; /* IBV_GID_TYPE_ROCE_V1, _V2 */
  uint32_t p = (uint32_t)port;
  const char *ndev = getenv("FAKE_IBV_NDEV_IFINDEX");
  uint32_t ifindex = ndev ? (uint32_t)atoi(ndev) : 0;
  memcpy(e + 16, &index, 4);
  memcpy(e + 20, &p, 4);
  memcpy(e + 24, &type, 4);
  memcpy(e + 28, &ifindex, 4);
}

int _ibv_query_gid_ex(struct fake_ctx *c, uint32_t port, uint32_t index, uint8_t *entry, uint32_t flags, size_t size) {
  (void)flags;
  if (!usable(c)) return EBADF;
  if (size < 32 || port < 1 || (int)port > c->dev.ports) return EINVAL;
  if (index >= GID_TBL_LEN) return ENODATA;
  gid_entry(entry, (int)port, index);
  return 0;
}

ssize_t _ibv_query_gid_table(struct fake_ctx *c, uint8_t *entries, size_t max, uint32_t flags, size_t size) {
  (void)flags;
  if (getenv("FAKE_IBV_NO_GID_TABLE")) return -EOPNOTSUPP;
  if (!usable(c)) return -EBADF;
  if (size < 32) return -EINVAL;
  size_t n = 0;
  for (int port = 1; port <= c->dev.ports; port++) {
    for (uint32_t i = 0; i < GID_TBL_LEN; i++) {
      if (n >= max) return -EINVAL;
      gid_entry(entries + n * 32, port, i);
      n++;
    }
  }
  return (ssize_t)n;
}
