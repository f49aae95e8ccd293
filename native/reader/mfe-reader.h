/*
 * libmfe-reader: the exporter's bounded read primitive.
 *
 * A batch of small system calls (pread of a counter file, a directory listing, a stat, a
 * netlink send/recv...) runs on a reader thread of this library, never on Node's event loop
 * and never on libuv's threadpool (a read blocked forever there would starve Node's own fs).
 * The caller learns that a batch ended through a pipe it watches (mfr_notify_fd), and decides
 * itself how long a batch may go without progress: mfr_poll says how long the current call
 * has been running, mfr_abandon gives the batch up and hands back what was read so far. An
 * abandoned thread stays in its call until the kernel lets it go, then frees the batch and
 * exits; at most `max_threads` reader threads exist at any time, blocked ones included, so a
 * host with many hung files costs that many threads and no more (mfr_submit says -EAGAIN).
 *
 * The wire format of a batch is written by src/reads/encode.ts; this header is its reference.
 */
#ifndef MFE_READER_H
#define MFE_READER_H

#include <stdint.h>

#define MFR_ABI_VERSION 3

/* Operation kinds. Every path is NUL-terminated in the request; every output goes to the
 * op's own region of `out_cap` bytes. Status: >= 0 as listed, or -errno. */
enum mfr_kind {
  MFR_PREAD = 1,     /* pread(fd, out, out_cap, offset): bytes read */
  MFR_READ = 2,      /* read(fd, out, out_cap) for streams (FIFOs): bytes read */
  MFR_READ_FILE = 3, /* open(path, O_RDONLY|O_NONBLOCK|flags), read to EOF or out_cap, close: bytes */
  MFR_READ_DIR = 4,  /* the names in a directory but . and .., each NUL-terminated: count (-ENOBUFS if out_cap is short) */
  MFR_READ_LINK = 5, /* readlink(path): bytes */
  MFR_STAT = 6,      /* stat(path) into struct mfr_stat: 0 */
  MFR_OPEN = 7,      /* open(path, flags|O_CLOEXEC): the descriptor */
  /* 8 was a flock probe that no program used; the numbers below keep their values. */
  MFR_SEND = 9,         /* send(fd, in, in_len, 0) on a connected socket: bytes sent */
  MFR_RECV = 10,        /* recv(fd, out, out_cap, MSG_TRUNC): the datagram's full length */
  MFR_IOCTL = 11,       /* copy `in` to out, optionally store &out[fix_to] at out[fix_at], ioctl(fd, offset, out): its result */
  MFR_NL_TRANSACT = 12, /* send netlink request `in` on a connected socket, recv until NLMSG_DONE or NLMSG_ERROR for
                         * its seq; out holds each datagram as u32 length + bytes: total bytes (-ENOBUFS if short) */
  /* libibverbs (verbs.c), loaded on first use: -ELIBACC without the library, -ELIBBAD when it lacks a
   * symbol (out holds the loader's message); a device is named by the handle MFR_VERBS_OPEN gave, in fd. */
  MFR_VERBS_OPEN = 13,       /* ibv_get_device_list, then ibv_open_device and ibv_query_device for each:
                              * one struct mfr_verbs_device each: the count (-errno of ibv_get_device_list) */
  MFR_VERBS_QUERY_PORT = 14, /* ibv_query_port(port = offset) into MFR_VERBS_PORT_BYTES: the compat
                              * ibv_port_attr (48 bytes, zero to 56), u64 ibv_query_port_speed at 56 when
                              * flags has MFR_VERBS_SPEED (0 when unsupported): 0 or -errno */
  MFR_VERBS_QUERY_GIDS = 15, /* the port's (offset) valid struct ibv_gid_entry, 32 bytes each: _ibv_query_gid_table
                              * with out_cap / 32 entries of room, else _ibv_query_gid_ex per index: entries */
  MFR_PREAD_COUNTER = 16,    /* pread(fd, out, out_cap, offset) of a counter's text ("%llu\n": show_hw_stats(),
                              * show_pma_counter() in drivers/infiniband/core/sysfs.c), parsed here: surrounding
                              * ASCII whitespace ignored, 1..20 digits, at most UINT64_MAX. The value as a u64 in the
                              * first 8 bytes (out_len 8): bytes read. Any other text: -EILSEQ with the text as output */
  MFR_KIND_MAX = 16,
};

#define MFR_NO_FIX 0xffffffffu

/* One operation, 48 bytes, little-endian. in_off is relative to the request's start. */
struct mfr_op {
  uint32_t kind;
  int32_t fd;
  uint32_t in_off;
  uint32_t in_len;
  uint32_t out_cap;
  uint32_t flags;
  int64_t offset;
  uint32_t fix_at;
  uint32_t fix_to;
  uint64_t reserved;
};

/* One result, 16 bytes. out_off is relative to the data area that follows the results. */
struct mfr_result {
  int64_t status;
  uint32_t out_off;
  uint32_t out_len;
};

struct mfr_stat {
  uint64_t dev;
  uint64_t ino;
  uint32_t mode;
  uint32_t pad;
  uint64_t size;
};

/* What MFR_VERBS_OPEN writes per listed device, 96 bytes. */
struct mfr_verbs_device {
  int32_t status;        /* 0, or -errno of the call `failed` names (then no handle) */
  uint32_t handle;       /* for the other verbs ops and mfr_verbs_close */
  uint32_t ports;        /* phys_port_cnt */
  uint32_t gid_capacity; /* the ports' gid_tbl_len summed: room for the device's whole GID table */
  uint32_t failed;       /* enum mfr_verbs_call */
  uint32_t pad[3];
  char name[64];
};

enum mfr_verbs_call { MFR_VERBS_CALL_NONE = 0, MFR_VERBS_CALL_OPEN = 1, MFR_VERBS_CALL_QUERY_DEVICE = 2, MFR_VERBS_CALL_TABLE = 3 };

#define MFR_VERBS_PORT_BYTES 64
#define MFR_VERBS_SPEED 1u

/* Status of an op that never ran (the batch was abandoned or its thread died before it). */
#define MFR_NOT_RUN (-125) /* -ECANCELED */

/* Records written to the notify pipe, 16 bytes each. */
enum mfr_event {
  MFR_EV_DONE = 1,     /* batch `id` finished: collect it */
  MFR_EV_CRASHED = 2,  /* the thread running batch `id` died: collect what it read */
  MFR_EV_RETURNED = 3, /* an abandoned thread's call returned; the thread is gone */
  MFR_EV_LOST = 4,     /* an idle thread died */
};

struct mfr_event_record {
  uint64_t id;
  uint32_t event;
  uint32_t pad;
};

/* Batch states (mfr_poll). */
enum mfr_state { MFR_RUNNING = 1, MFR_DONE = 2, MFR_CRASHED = 3 };

typedef struct mfr mfr;

uint32_t mfr_abi_version(void);
mfr *mfr_open(uint32_t max_threads);
/* The read end of the notify pipe (non-blocking, close-on-exec); the caller owns it. */
int mfr_notify_fd(mfr *r);
/* Copies the request (ops first, then their inputs) and starts it: the batch id, -EAGAIN when
 * `max_threads` threads exist and none is free, -EINVAL for a malformed request. */
int64_t mfr_submit(mfr *r, const uint8_t *request, uint32_t request_len, uint32_t n_ops);
/* The batch's state; `done` ops have finished, the last one `idle_ns` ago (or since start). */
int mfr_poll(mfr *r, uint64_t id, uint32_t *done, uint64_t *idle_ns);
/* Results then data into `out`, which must hold n_ops * 16 bytes plus every op's out_cap
 * rounded up to 8 (each op's region starts 8-aligned); frees the batch. Bytes, or -errno. */
int64_t mfr_collect(mfr *r, uint64_t id, uint8_t *out, uint64_t out_len);
/* Gives up a running batch: what was read so far goes to `out` (later ops say MFR_NOT_RUN) and
 * `stuck_at` names the op its thread is in. Returns MFR_RUNNING when abandoned, or MFR_DONE /
 * MFR_CRASHED when the batch ended meanwhile (then this is mfr_collect); -errno otherwise. */
int mfr_abandon(mfr *r, uint64_t id, uint8_t *out, uint64_t out_len, uint32_t *stuck_at);
/* live, idle, blocked (abandoned, still in a call), started, lost, max_threads. */
void mfr_stats(mfr *r, uint64_t *out6);
/* Stops idle threads; busy and blocked ones stop when their call returns. */
void mfr_close(mfr *r);
/* Runs a request's ops on the caller's thread (the direct executor's verbs ops): results then
 * data into `out`, laid out as mfr_collect does. Bytes, or -errno. */
int64_t mfr_run_sync(const uint8_t *request, uint32_t request_len, uint32_t n_ops, uint8_t *out, uint64_t out_len);
/* The owner lets go of a device MFR_VERBS_OPEN opened: ibv_close_device runs now, or when the
 * last op still using it returns (a thread abandoned inside a query). 0, or -EBADF. */
int mfr_verbs_close(uint32_t handle);
/* ops.c: runs one op of a request (`request` holds its inputs, `data` its output regions). */
void mfr_run_op(const struct mfr_op *op, const uint8_t *request, uint8_t *data, struct mfr_result *res);
/* verbs.c: runs one MFR_VERBS_* op; *len is its output's length. */
int64_t mfr_verbs_op(const struct mfr_op *op, uint8_t *out, uint32_t *len);

/* Tests: cancel one idle thread, as if it had died. 0, or -ESRCH when none is idle. */
int mfr_test_kill_idle(mfr *r);

#endif
