/*
 * libmfe-reader's thread pool and the caller's side (mfe-reader.h is the contract; the ops
 * themselves are ops.c). Threads are plain pthreads with small stacks and every signal blocked;
 * one mutex guards the reader's lists, and the only thing a running op shares without it is its
 * progress (two atomics the caller polls).
 */
#define _GNU_SOURCE
#include "mfe-reader.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(struct mfr_op) == 48, "mfr_op is 48 bytes");
_Static_assert(sizeof(struct mfr_result) == 16, "mfr_result is 16 bytes");
_Static_assert(sizeof(struct mfr_stat) == 32, "mfr_stat is 32 bytes");
_Static_assert(sizeof(struct mfr_event_record) == 16, "event records are 16 bytes");

/* Large enough for readdir/opendir and libc's own needs; reads go to heap buffers. */
#define STACK_BYTES (256 * 1024)
/* A freed batch block is kept for the next request up to this size (a tick's is ~200 KB). */
#define SPARE_MAX (2u << 20)
/* A request or its output above this is a caller bug, not a workload. */
#define MAX_BYTES (256u << 20)

enum batch_state { B_RUNNING = MFR_RUNNING, B_DONE = MFR_DONE, B_CRASHED = MFR_CRASHED, B_ABANDONED = 4 };

struct worker;

struct batch {
  uint64_t id;
  uint32_t n;
  enum batch_state state;
  const struct mfr_op *ops; /* in `request` */
  uint8_t *request;
  struct mfr_result *res;
  uint8_t *data;
  uint64_t data_len;
  _Atomic uint32_t done;
  _Atomic uint64_t progress_ns;
  _Atomic int given_up; /* set by mfr_abandon: stop after the op in progress */
  uint32_t abandoned_at;
  size_t size; /* of the whole block */
  struct worker *w;
  struct batch *next;
};

struct worker {
  pthread_t tid;
  pthread_cond_t cv;
  struct batch *job;
  int abandoned;
  int stop;
  int lost; /* idle when it died */
  struct worker *next_idle;
  struct mfr *r;
};

struct mfr {
  pthread_mutex_t mu;
  int notify_r, notify_w;
  uint32_t max_threads;
  struct worker *idle;
  struct batch *batches;
  uint32_t threads; /* every thread that exists: idle, busy or abandoned */
  uint32_t blocked; /* abandoned and still inside a call */
  uint32_t n_idle;
  uint64_t next_id;
  uint64_t started, lost;
  /* The last freed batch block: the same request every tick reuses it instead of a fresh
   * malloc (blocks this size are mmap'ed, and unmapping one costs every thread a TLB flush). */
  struct batch *spare;
  size_t spare_size;
  int closing;
  uint32_t refs; /* the owner, plus one per thread */
};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint32_t mfr_abi_version(void) { return MFR_ABI_VERSION; }

static void notify(struct mfr *r, uint64_t id, uint32_t event) {
  struct mfr_event_record rec = {id, event, 0};
  /* Non-blocking: a full pipe loses the record, and the caller's timer finds the state. */
  ssize_t n;
  do n = write(r->notify_w, &rec, sizeof rec);
  while (n < 0 && errno == EINTR);
}

static void release(struct mfr *r) {
  /* Called with r->mu held; frees the reader when the owner and every thread are gone. */
  if (--r->refs > 0) {
    pthread_mutex_unlock(&r->mu);
    return;
  }
  for (struct batch *b = r->batches; b;) {
    struct batch *next = b->next;
    free(b);
    b = next;
  }
  free(r->spare);
  pthread_mutex_unlock(&r->mu);
  pthread_mutex_destroy(&r->mu);
  close(r->notify_w);
  free(r);
}

mfr *mfr_open(uint32_t max_threads) {
  struct mfr *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  int p[2];
  if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
    free(r);
    return NULL;
  }
  pthread_mutex_init(&r->mu, NULL);
  r->notify_r = p[0];
  r->notify_w = p[1];
  r->max_threads = max_threads ? max_threads : 1;
  r->next_id = 1;
  r->refs = 1;
  return r;
}

int mfr_notify_fd(mfr *r) { return r->notify_r; }

/* ---------------------------------------------------------------------------------------- */
/* Threads */

static void unlink_batch(struct mfr *r, struct batch *b) {
  for (struct batch **p = &r->batches; *p; p = &(*p)->next) {
    if (*p == b) {
      *p = b->next;
      return;
    }
  }
}

static void remove_idle(struct mfr *r, struct worker *w) {
  for (struct worker **p = &r->idle; *p; p = &(*p)->next_idle) {
    if (*p == w) {
      *p = w->next_idle;
      r->n_idle--;
      return;
    }
  }
}

/* Descriptors an abandoned batch opened after the caller stopped listening are the thread's to close. */
static void close_orphans(struct batch *b) {
  for (uint32_t i = b->abandoned_at; i < b->n; i++) {
    if (b->ops[i].kind == MFR_OPEN && b->res[i].status >= 0) close((int)b->res[i].status);
  }
}

static void unlock_mutex(void *mu) { pthread_mutex_unlock(mu); }

/* Runs when a thread is cancelled or exits from inside an op (never on the normal path). */
static void worker_died(void *arg) {
  struct worker *w = arg;
  struct mfr *r = w->r;
  pthread_mutex_lock(&r->mu);
  struct batch *b = w->job;
  if (b && b->state == B_ABANDONED) {
    close_orphans(b);
    notify(r, b->id, MFR_EV_RETURNED);
    free(b);
    r->blocked--;
  } else if (b) {
    b->state = B_CRASHED;
    notify(r, b->id, MFR_EV_CRASHED);
  } else {
    remove_idle(r, w);
    notify(r, 0, MFR_EV_LOST);
  }
  r->lost++;
  r->threads--;
  pthread_cond_destroy(&w->cv);
  free(w);
  release(r);
}

static void *worker_main(void *arg) {
  struct worker *w = arg;
  struct mfr *r = w->r;
  int ignored;
  /* Named, so ps -L, top -H and /proc/<pid>/task/<tid>/comm say which threads are ours. */
  pthread_setname_np(pthread_self(), "mfe-reader");
  /* A thread can only die (be cancelled) while it waits for work or runs an op, never while
   * it holds the mutex elsewhere: worker_died takes it. */
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &ignored);
  pthread_cleanup_push(worker_died, w);
  for (;;) {
    pthread_mutex_lock(&r->mu);
    pthread_cleanup_push(unlock_mutex, &r->mu);
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &ignored);
    while (!w->job && !w->stop) pthread_cond_wait(&w->cv, &r->mu);
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &ignored);
    pthread_cleanup_pop(0);
    struct batch *b = w->job;
    pthread_mutex_unlock(&r->mu);
    if (!b) break;
    atomic_store(&b->progress_ns, now_ns());
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &ignored);
    for (uint32_t i = 0; i < b->n; i++) {
      mfr_run_op(&b->ops[i], b->request, b->data, &b->res[i]);
      atomic_store_explicit(&b->progress_ns, now_ns(), memory_order_relaxed);
      atomic_store_explicit(&b->done, i + 1, memory_order_release);
      if (atomic_load_explicit(&b->given_up, memory_order_relaxed)) break;
    }
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &ignored);
    pthread_mutex_lock(&r->mu);
    w->job = NULL;
    int leave = 0;
    if (b->state == B_ABANDONED) {
      close_orphans(b);
      notify(r, b->id, MFR_EV_RETURNED);
      free(b);
      r->blocked--;
      leave = 1;
    } else {
      b->state = B_DONE;
      notify(r, b->id, MFR_EV_DONE);
      if (w->stop || r->closing) leave = 1;
      else {
        w->next_idle = r->idle;
        r->idle = w;
        r->n_idle++;
      }
    }
    pthread_mutex_unlock(&r->mu);
    if (leave) break;
  }
  pthread_cleanup_pop(0);
  pthread_mutex_lock(&r->mu);
  r->threads--;
  pthread_cond_destroy(&w->cv);
  free(w);
  release(r);
  return NULL;
}

static struct worker *spawn(struct mfr *r) {
  struct worker *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->r = r;
  pthread_cond_init(&w->cv, NULL);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, STACK_BYTES);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  /* Signals belong to Node's main thread; the new thread inherits this mask. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&w->tid, &attr, worker_main, w);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    pthread_cond_destroy(&w->cv);
    free(w);
    errno = rc;
    return NULL;
  }
  r->threads++;
  r->started++;
  r->refs++;
  return w;
}

/* ---------------------------------------------------------------------------------------- */
/* The caller's side */

static int valid_op(const struct mfr_op *op, uint32_t request_len) {
  if (op->kind < 1 || op->kind > MFR_KIND_MAX) return 0;
  if (op->in_off > request_len || op->in_len > request_len - op->in_off) return 0;
  if (op->out_cap > MAX_BYTES) return 0;
  switch (op->kind) {
    case MFR_READ_FILE:
    case MFR_READ_DIR:
    case MFR_READ_LINK:
    case MFR_STAT:
    case MFR_OPEN:
      return op->in_len >= 1; /* and NUL-terminated: checked by the caller */
    case MFR_IOCTL:
      if (op->fix_at == MFR_NO_FIX) return 1;
      return op->out_cap >= sizeof(void *) && op->fix_at <= op->out_cap - sizeof(void *) && op->fix_to <= op->out_cap;
    default:
      return 1;
  }
}

/* The data area a valid request's outputs need, or -EINVAL. */
static int64_t data_bytes(const uint8_t *request, uint32_t request_len, uint32_t n_ops) {
  if (n_ops == 0 || request_len > MAX_BYTES || (uint64_t)n_ops * sizeof(struct mfr_op) > request_len) return -EINVAL;
  const struct mfr_op *ops = (const struct mfr_op *)request;
  uint64_t data_len = 0;
  for (uint32_t i = 0; i < n_ops; i++) {
    struct mfr_op op;
    memcpy(&op, &ops[i], sizeof op);
    if (!valid_op(&op, request_len)) return -EINVAL;
    int path_op =
        op.kind == MFR_READ_FILE || op.kind == MFR_READ_DIR || op.kind == MFR_READ_LINK || op.kind == MFR_STAT || op.kind == MFR_OPEN;
    if (path_op && request[op.in_off + op.in_len - 1] != 0) return -EINVAL;
    if (op.kind == MFR_STAT && op.out_cap < sizeof(struct mfr_stat)) return -EINVAL;
    if (op.kind == MFR_VERBS_QUERY_PORT && op.out_cap < MFR_VERBS_PORT_BYTES) return -EINVAL;
    if (op.kind == MFR_PREAD_COUNTER && op.out_cap < sizeof(uint64_t)) return -EINVAL;
    data_len += (op.out_cap + 7u) & ~7u;
  }
  return data_len > MAX_BYTES ? -EINVAL : (int64_t)data_len;
}

/* Each op's region, 8-aligned in op order; every status MFR_NOT_RUN until it runs. */
static void lay_out(const struct mfr_op *ops, struct mfr_result *res, uint32_t n_ops) {
  uint32_t at = 0;
  for (uint32_t i = 0; i < n_ops; i++) {
    res[i].status = MFR_NOT_RUN;
    res[i].out_off = at;
    res[i].out_len = 0;
    at += (ops[i].out_cap + 7u) & ~7u;
  }
}

int64_t mfr_run_sync(const uint8_t *request, uint32_t request_len, uint32_t n_ops, uint8_t *out, uint64_t out_len) {
  int64_t data_len = data_bytes(request, request_len, n_ops);
  if (data_len < 0) return data_len;
  uint64_t need = (uint64_t)n_ops * sizeof(struct mfr_result) + (uint64_t)data_len;
  if (out_len < need || ((uintptr_t)out & 7u) != 0) return -ENOBUFS;
  uint8_t *copy = malloc(request_len); /* 8-aligned, as ops are read in place */
  if (!copy) return -ENOMEM;
  memcpy(copy, request, request_len);
  struct batch b;
  memset(&b, 0, sizeof b);
  b.request = copy;
  b.ops = (const struct mfr_op *)copy;
  b.res = (struct mfr_result *)out;
  b.data = out + (uint64_t)n_ops * sizeof(struct mfr_result);
  b.data_len = (uint64_t)data_len;
  b.n = n_ops;
  lay_out(b.ops, b.res, n_ops);
  for (uint32_t i = 0; i < n_ops; i++) mfr_run_op(&b.ops[i], b.request, b.data, &b.res[i]);
  free(copy);
  return (int64_t)need;
}

int64_t mfr_submit(mfr *r, const uint8_t *request, uint32_t request_len, uint32_t n_ops) {
  int64_t data_bytes_or_error = data_bytes(request, request_len, n_ops);
  if (data_bytes_or_error < 0) return data_bytes_or_error;
  uint64_t data_len = (uint64_t)data_bytes_or_error;
  size_t head = (sizeof(struct batch) + 7) & ~(size_t)7;
  size_t req = ((size_t)request_len + 7) & ~(size_t)7;
  size_t size = head + req + (size_t)n_ops * sizeof(struct mfr_result) + data_len;
  struct batch *b = NULL;
  pthread_mutex_lock(&r->mu);
  if (r->spare && r->spare_size >= size) {
    b = r->spare;
    size = r->spare_size;
    r->spare = NULL;
  }
  pthread_mutex_unlock(&r->mu);
  if (!b) b = malloc(size);
  if (!b) return -ENOMEM;
  memset(b, 0, sizeof *b);
  b->size = size;
  b->request = (uint8_t *)b + head;
  memcpy(b->request, request, request_len);
  b->ops = (const struct mfr_op *)b->request;
  b->res = (struct mfr_result *)(b->request + req);
  b->data = (uint8_t *)(b->res + n_ops);
  b->data_len = data_len;
  b->n = n_ops;
  lay_out(b->ops, b->res, n_ops);
  b->state = B_RUNNING;

  pthread_mutex_lock(&r->mu);
  if (r->closing) {
    pthread_mutex_unlock(&r->mu);
    free(b);
    return -ESHUTDOWN;
  }
  struct worker *w = r->idle;
  if (w) {
    r->idle = w->next_idle;
    r->n_idle--;
  } else if (r->threads < r->max_threads) {
    w = spawn(r);
    if (!w) {
      int e = errno;
      pthread_mutex_unlock(&r->mu);
      free(b);
      return -(int64_t)e;
    }
  } else {
    pthread_mutex_unlock(&r->mu);
    free(b);
    return -EAGAIN;
  }
  b->id = r->next_id++;
  b->w = w;
  b->next = r->batches;
  r->batches = b;
  w->job = b;
  pthread_cond_signal(&w->cv);
  int64_t id = (int64_t)b->id;
  pthread_mutex_unlock(&r->mu);
  return id;
}

static struct batch *find(struct mfr *r, uint64_t id) {
  for (struct batch *b = r->batches; b; b = b->next)
    if (b->id == id) return b;
  return NULL;
}

int mfr_poll(mfr *r, uint64_t id, uint32_t *done, uint64_t *idle_ns) {
  pthread_mutex_lock(&r->mu);
  struct batch *b = find(r, id);
  int state = b ? (int)b->state : -ENOENT;
  if (b) {
    *done = atomic_load_explicit(&b->done, memory_order_acquire);
    uint64_t t = atomic_load_explicit(&b->progress_ns, memory_order_relaxed);
    uint64_t now = now_ns();
    *idle_ns = t == 0 || now < t ? 0 : now - t;
  }
  pthread_mutex_unlock(&r->mu);
  return state;
}

/* Results of ops [0, upto) and their data; later ops say MFR_NOT_RUN. */
static int64_t copy_out(const struct batch *b, uint32_t upto, uint8_t *out, uint64_t out_len) {
  uint64_t need = (uint64_t)b->n * sizeof(struct mfr_result) + b->data_len;
  if (out_len < need) return -ENOBUFS;
  struct mfr_result *res = (struct mfr_result *)out;
  uint8_t *data = out + (uint64_t)b->n * sizeof(struct mfr_result);
  for (uint32_t i = 0; i < b->n; i++) {
    res[i] = b->res[i];
    if (i >= upto) {
      res[i].status = MFR_NOT_RUN;
      res[i].out_len = 0;
    } else if (res[i].out_len > 0) {
      memcpy(data + res[i].out_off, b->data + res[i].out_off, res[i].out_len);
    }
  }
  return (int64_t)need;
}

int64_t mfr_collect(mfr *r, uint64_t id, uint8_t *out, uint64_t out_len) {
  pthread_mutex_lock(&r->mu);
  struct batch *b = find(r, id);
  if (!b || b->state == B_RUNNING) {
    pthread_mutex_unlock(&r->mu);
    return b ? -EBUSY : -ENOENT;
  }
  int64_t rc = copy_out(b, atomic_load_explicit(&b->done, memory_order_acquire), out, out_len);
  if (rc >= 0) {
    unlink_batch(r, b); /* done: its thread moved on; crashed: its thread is gone */
    if (b->size <= SPARE_MAX && (!r->spare || r->spare_size < b->size)) {
      free(r->spare);
      r->spare = b;
      r->spare_size = b->size;
    } else {
      free(b);
    }
  }
  pthread_mutex_unlock(&r->mu);
  return rc;
}

int mfr_abandon(mfr *r, uint64_t id, uint8_t *out, uint64_t out_len, uint32_t *stuck_at) {
  pthread_mutex_lock(&r->mu);
  struct batch *b = find(r, id);
  if (!b) {
    pthread_mutex_unlock(&r->mu);
    return -ENOENT;
  }
  if (b->state != B_RUNNING) {
    int state = (int)b->state;
    pthread_mutex_unlock(&r->mu);
    int64_t rc = mfr_collect(r, id, out, out_len);
    return rc < 0 ? (int)rc : state;
  }
  uint32_t done = atomic_load_explicit(&b->done, memory_order_acquire);
  int64_t rc = copy_out(b, done, out, out_len);
  if (rc < 0) {
    pthread_mutex_unlock(&r->mu);
    return (int)rc;
  }
  *stuck_at = done;
  b->abandoned_at = done;
  b->state = B_ABANDONED;
  atomic_store(&b->given_up, 1);
  unlink_batch(r, b);
  r->blocked++;
  b->w->abandoned = 1;
  pthread_mutex_unlock(&r->mu);
  return MFR_RUNNING;
}

void mfr_stats(mfr *r, uint64_t *out) {
  pthread_mutex_lock(&r->mu);
  out[0] = r->threads - r->blocked;
  out[1] = r->n_idle;
  out[2] = r->blocked;
  out[3] = r->started;
  out[4] = r->lost;
  out[5] = r->max_threads;
  pthread_mutex_unlock(&r->mu);
}

void mfr_close(mfr *r) {
  pthread_mutex_lock(&r->mu);
  r->closing = 1;
  for (struct worker *w = r->idle; w; w = w->next_idle) {
    w->stop = 1;
    pthread_cond_signal(&w->cv);
  }
  r->idle = NULL;
  r->n_idle = 0;
  release(r);
}

int mfr_test_kill_idle(mfr *r) {
  pthread_mutex_lock(&r->mu);
  struct worker *w = r->idle;
  int rc = w ? pthread_cancel(w->tid) : ESRCH;
  pthread_mutex_unlock(&r->mu);
  return -rc;
}
