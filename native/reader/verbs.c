/*
 * libibverbs queries as reader ops (mfe-reader.h MFR_VERBS_*). libibverbs is loaded here with
 * dlopen on first use, so the reader loads and runs its other ops on a host without it. A
 * device the exporter opened lives in a table of our own and is named by a handle: an op takes
 * a reference for as long as it runs, and ibv_close_device() runs when the owner has let go
 * (mfr_verbs_close) and the last op using the context has returned, so a thread abandoned in
 * ibv_query_port never finds its context freed under it.
 *
 * No verbs header is needed: the calls and struct offsets used are the stable ABI
 * (rdma-core libibverbs/libibverbs.map.in, verbs.h; see src/sources/verbs/layout.ts):
 * - ibv_query_port@@IBVERBS_1.1 fills the 48-byte struct _compat_ibv_port_attr (verbs.c);
 *   ibv_query_port() in verbs.h is an inline, not a symbol;
 * - struct ibv_device_attr is 232 bytes, phys_port_cnt u8 at 227;
 * - _ibv_query_gid_ex / _ibv_query_gid_table (IBVERBS_1.11) fill 32-byte struct ibv_gid_entry
 *   (gid[16], gid_index u32, port_num u32 @20, gid_type u32, ndev_ifindex u32);
 * - ibv_query_port_speed (IBVERBS_1.16, optional) gives the effective speed in 100 Mb/s units.
 */
#define _GNU_SOURCE
#include "mfe-reader.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define DEVICE_ATTR_BYTES 232
#define PHYS_PORT_CNT_AT 227
#define COMPAT_PORT_ATTR_BYTES 48
#define GID_TBL_LEN_AT 12
#define GID_ENTRY_BYTES 32
#define GID_PORT_NUM_AT 20
#define MAX_DEVICES 256
#define NAME_BYTES 64

_Static_assert(sizeof(struct mfr_verbs_device) == 32 + NAME_BYTES, "mfr_verbs_device is 96 bytes");

struct verbs_api {
  void **(*get_device_list)(int *num);
  void (*free_device_list)(void **list);
  const char *(*get_device_name)(void *device);
  void *(*open_device)(void *device);
  int (*close_device)(void *ctx);
  int (*query_device)(void *ctx, void *attr);
  int (*query_port)(void *ctx, uint8_t port, void *attr);
  int (*query_gid_ex)(void *ctx, uint32_t port, uint32_t index, void *entry, uint32_t flags, size_t size);
  /* optional */
  ssize_t (*query_gid_table)(void *ctx, void *entries, size_t max, uint32_t flags, size_t size);
  int (*query_port_speed)(void *ctx, uint32_t port, uint64_t *speed);
};

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static struct verbs_api api;
static int64_t load_status; /* 0, -ELIBACC (no library) or -ELIBBAD (a required symbol missing) */
static char load_error[512];

static void *sym(void *lib, const char *name, int required) {
  void *p = dlsym(lib, name);
  if (!p && required && load_status == 0) {
    load_status = -ELIBBAD;
    snprintf(load_error, sizeof load_error, "libibverbs.so.1 lacks %s", name);
  }
  return p;
}

static void load(void) {
  void *lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    load_status = -ELIBACC;
    const char *e = dlerror();
    snprintf(load_error, sizeof load_error, "%s", e ? e : "libibverbs.so.1: cannot be loaded");
    return;
  }
  api.get_device_list = (void **(*)(int *))sym(lib, "ibv_get_device_list", 1);
  api.free_device_list = (void (*)(void **))sym(lib, "ibv_free_device_list", 1);
  api.get_device_name = (const char *(*)(void *))sym(lib, "ibv_get_device_name", 1);
  api.open_device = (void *(*)(void *))sym(lib, "ibv_open_device", 1);
  api.close_device = (int (*)(void *))sym(lib, "ibv_close_device", 1);
  api.query_device = (int (*)(void *, void *))sym(lib, "ibv_query_device", 1);
  api.query_port = (int (*)(void *, uint8_t, void *))sym(lib, "ibv_query_port", 1);
  api.query_gid_ex = (int (*)(void *, uint32_t, uint32_t, void *, uint32_t, size_t))sym(lib, "_ibv_query_gid_ex", 1);
  api.query_gid_table = (ssize_t(*)(void *, void *, size_t, uint32_t, size_t))sym(lib, "_ibv_query_gid_table", 0);
  api.query_port_speed = (int (*)(void *, uint32_t, uint64_t *))sym(lib, "ibv_query_port_speed", 0);
  /* The library stays loaded (providers and open contexts live in it). */
}

/* libibverbs calls answer 0, an errno, or -1 with errno set: -errno either way. */
static int64_t verbs_rc(int rc) {
  if (rc == 0) return 0;
  if (rc > 0) return -(int64_t)rc;
  return errno ? -(int64_t)errno : (int64_t)rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Open devices */

struct device {
  void *ctx;
  uint32_t gen;  /* moves on each time the slot is reused: stale handles miss */
  uint32_t refs; /* the owner's, plus one per op running on it */
  int owned;     /* the owner has not let go yet */
};

static pthread_mutex_t devices_mu = PTHREAD_MUTEX_INITIALIZER;
static struct device devices[MAX_DEVICES];

static uint32_t handle_of(uint32_t slot) { return (devices[slot].gen << 8) | slot; }

static int64_t add_device(void *ctx, uint32_t *handle) {
  pthread_mutex_lock(&devices_mu);
  for (uint32_t i = 0; i < MAX_DEVICES; i++) {
    if (devices[i].ctx) continue;
    devices[i].ctx = ctx;
    devices[i].gen = (devices[i].gen + 1) & 0x7fffff;
    devices[i].refs = 1;
    devices[i].owned = 1;
    *handle = handle_of(i);
    pthread_mutex_unlock(&devices_mu);
    return 0;
  }
  pthread_mutex_unlock(&devices_mu);
  return -EMFILE;
}

/* The context of an owned device, with a reference for the caller; NULL for a stale handle. */
static void *acquire(uint32_t handle, uint32_t *slot) {
  uint32_t i = handle & 0xff;
  void *ctx = NULL;
  pthread_mutex_lock(&devices_mu);
  if (devices[i].ctx && devices[i].owned && handle_of(i) == handle) {
    devices[i].refs++;
    ctx = devices[i].ctx;
  }
  pthread_mutex_unlock(&devices_mu);
  *slot = i;
  return ctx;
}

static void release_device(uint32_t slot) {
  void *close_ctx = NULL;
  pthread_mutex_lock(&devices_mu);
  if (--devices[slot].refs == 0) {
    close_ctx = devices[slot].ctx;
    devices[slot].ctx = NULL;
  }
  pthread_mutex_unlock(&devices_mu);
  if (close_ctx) api.close_device(close_ctx);
}

int mfr_verbs_close(uint32_t handle) {
  uint32_t i = handle & 0xff;
  pthread_mutex_lock(&devices_mu);
  int ok = devices[i].ctx && devices[i].owned && handle_of(i) == handle;
  if (ok) devices[i].owned = 0;
  pthread_mutex_unlock(&devices_mu);
  if (!ok) return -EBADF;
  release_device(i);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Ops */

static int64_t loaded(uint8_t *out, uint32_t cap, uint32_t *len) {
  pthread_once(&load_once, load);
  if (load_status == 0) return 0;
  size_t n = strlen(load_error);
  if (n > cap) n = cap;
  memcpy(out, load_error, n);
  *len = (uint32_t)n;
  return load_status;
}

static uint32_t port_count(void *ctx, int32_t *status) {
  uint8_t attr[DEVICE_ATTR_BYTES] __attribute__((aligned(8)));
  memset(attr, 0, sizeof attr);
  int64_t rc = verbs_rc(api.query_device(ctx, attr));
  *status = (int32_t)rc;
  return rc == 0 ? attr[PHYS_PORT_CNT_AT] : 0;
}

static int32_t gid_tbl_len(void *ctx, uint32_t port) {
  uint8_t attr[64] __attribute__((aligned(8)));
  memset(attr, 0, sizeof attr);
  if (api.query_port(ctx, (uint8_t)port, attr) != 0) return 0;
  int32_t n;
  memcpy(&n, attr + GID_TBL_LEN_AT, 4);
  return n > 0 ? n : 0;
}

/* Every listed device, opened: one mfr_verbs_device each. */
static int64_t op_open(uint8_t *out, uint32_t cap, uint32_t *len) {
  int64_t s = loaded(out, cap, len);
  if (s < 0) return s;
  int num = 0;
  errno = 0;
  void **list = api.get_device_list(&num);
  if (!list) return errno ? -(int64_t)errno : -ENODEV;
  if ((uint64_t)num * sizeof(struct mfr_verbs_device) > cap) {
    api.free_device_list(list);
    return -ENOBUFS;
  }
  for (int d = 0; d < num; d++) {
    struct mfr_verbs_device rec;
    memset(&rec, 0, sizeof rec);
    const char *name = api.get_device_name(list[d]);
    snprintf(rec.name, sizeof rec.name, "%s", name ? name : "");
    errno = 0;
    void *ctx = api.open_device(list[d]);
    if (!ctx) {
      rec.status = errno ? -errno : -ENODEV;
      rec.failed = MFR_VERBS_CALL_OPEN;
    } else {
      rec.ports = port_count(ctx, &rec.status);
      if (rec.status != 0) rec.failed = MFR_VERBS_CALL_QUERY_DEVICE;
      for (uint32_t p = 1; rec.status == 0 && p <= rec.ports; p++) rec.gid_capacity += (uint32_t)gid_tbl_len(ctx, p);
      if (rec.status == 0 && (rec.status = (int32_t)add_device(ctx, &rec.handle)) != 0) rec.failed = MFR_VERBS_CALL_TABLE;
      if (rec.status != 0) api.close_device(ctx);
    }
    memcpy(out + (size_t)d * sizeof rec, &rec, sizeof rec);
  }
  api.free_device_list(list);
  *len = (uint32_t)num * sizeof(struct mfr_verbs_device);
  return num;
}

/* The compat ibv_port_attr (48 bytes, zero-padded to 56), then the speed (u64, 0 when none). */
static int64_t op_query_port(uint32_t handle, uint32_t port, uint32_t flags, uint8_t *out, uint32_t cap, uint32_t *len) {
  if (cap < MFR_VERBS_PORT_BYTES) return -EINVAL;
  int64_t s = loaded(out, cap, len);
  if (s < 0) return s;
  *len = 0;
  uint32_t slot;
  void *ctx = acquire(handle, &slot);
  if (!ctx) return -EBADF;
  memset(out, 0, MFR_VERBS_PORT_BYTES);
  s = port > 255 ? -EINVAL : verbs_rc(api.query_port(ctx, (uint8_t)port, out));
  uint64_t speed = 0;
  if (s == 0 && (flags & MFR_VERBS_SPEED) && api.query_port_speed && api.query_port_speed(ctx, port, &speed) != 0) speed = 0;
  memcpy(out + 56, &speed, sizeof speed);
  release_device(slot);
  if (s == 0) *len = MFR_VERBS_PORT_BYTES;
  return s;
}

/*
 * The port's valid GID entries: one _ibv_query_gid_table (the whole device's table, in `cap`)
 * kept to this port, else one _ibv_query_gid_ex per index of the port's table. Entries written.
 */
static int64_t op_query_gids(uint32_t handle, uint32_t port, uint8_t *out, uint32_t cap, uint32_t *len) {
  int64_t s = loaded(out, cap, len);
  if (s < 0) return s;
  *len = 0;
  uint32_t slot;
  void *ctx = acquire(handle, &slot);
  if (!ctx) return -EBADF;
  size_t room = cap / GID_ENTRY_BYTES;
  ssize_t n = api.query_gid_table && room > 0 ? api.query_gid_table(ctx, out, room, 0, GID_ENTRY_BYTES) : -1;
  uint32_t kept = 0;
  if (n >= 0) {
    for (ssize_t i = 0; i < n; i++) {
      uint32_t p;
      memcpy(&p, out + i * GID_ENTRY_BYTES + GID_PORT_NUM_AT, 4);
      if (p != port) continue;
      if ((uint32_t)i != kept) memmove(out + kept * GID_ENTRY_BYTES, out + i * GID_ENTRY_BYTES, GID_ENTRY_BYTES);
      kept++;
    }
  } else {
    uint32_t entries = (uint32_t)gid_tbl_len(ctx, port);
    for (uint32_t index = 0; index < entries && kept < room; index++) {
      if (api.query_gid_ex(ctx, port, index, out + kept * GID_ENTRY_BYTES, 0, GID_ENTRY_BYTES) == 0) kept++;
    }
  }
  release_device(slot);
  *len = kept * GID_ENTRY_BYTES;
  return kept;
}

int64_t mfr_verbs_op(const struct mfr_op *op, uint8_t *out, uint32_t *len) {
  switch (op->kind) {
    case MFR_VERBS_OPEN:
      return op_open(out, op->out_cap, len);
    case MFR_VERBS_QUERY_PORT:
      return op_query_port((uint32_t)op->fd, (uint32_t)op->offset, op->flags, out, op->out_cap, len);
    case MFR_VERBS_QUERY_GIDS:
      return op_query_gids((uint32_t)op->fd, (uint32_t)op->offset, out, op->out_cap, len);
    default:
      return -EINVAL;
  }
}
