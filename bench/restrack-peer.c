/*
 * The kernel's end of the restrack dumps for `npm run bench` (case `connections`), and the read
 * floor beside the exporter. Reads DIR/manifest.txt (written by bench/lib/gen-restrack.mjs: the
 * device list's file, then one line per device "INDEX QP_FILE CM_ID_FILE"; every file one datagram
 * per line in hex, the fixture format of test/fixtures/netlink/).
 *
 *   restrack-peer serve FD DIR
 *     answers each request on the datagram socket FD (the exporter's NETLINK_RDMA socket is the
 *     other end of a socketpair): RDMA_NLDEV_CMD_GET with the device list, RES_QP_GET and
 *     RES_CM_ID_GET with the dump of the device its DEV_INDEX names, every message's nlmsg_seq set
 *     to the request's. Each QP dump moves the PSNs as traffic would: +STEP on the sq_psn of every
 *     QP with an even number, +STEP on the rq_psn of every odd one (mod 2^24).
 *   restrack-peer floor SECONDS INTERVAL_MS DIR
 *     the read floor: a socketpair to a `serve` child, and every INTERVAL_MS the requests the
 *     exporter sends for one read of every device (the list, each QP dump, each cm_id dump), each
 *     answer received datagram by datagram into one buffer as the exporter's reader does
 *     (recv(MSG_TRUNC)), nothing decoded. Prints one JSON line: CPU (getrusage, this process only),
 *     reads, QPs and bytes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RDMA_NL_NLDEV 5
#define CMD_GET 1
#define CMD_RES_QP_GET 10
#define CMD_RES_CM_ID_GET 11
#define ATTR_DEV_INDEX 1
#define ATTR_RES_QP 19
#define ATTR_RES_QP_ENTRY 20
#define ATTR_LQPN 21
#define ATTR_RQ_PSN 23
#define ATTR_SQ_PSN 24
#define NLM_F_REQUEST 1
#define NLM_F_ACK 4
#define NLM_F_DUMP 0x300
#define STEP 1000u
#define PSN_MASK 0xffffffu
#define MAX_DEVICES 8
#define ROOM (64u << 20)

struct dump {
  size_t n;
  uint8_t **dg;
  size_t *len;
};

struct device {
  uint32_t index;
  struct dump qp, cm;
};

static struct dump list;
static struct device devices[MAX_DEVICES];
static size_t ndevices;

static void die(const char *what) {
  perror(what);
  exit(1);
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static void load(const char *dir, const char *name, struct dump *d) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  if (!f) die(path);
  char *line = NULL;
  size_t cap = 0;
  ssize_t got;
  while ((got = getline(&line, &cap, f)) > 0) {
    while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) got--;
    if (got == 0) continue;
    size_t bytes = (size_t)got / 2;
    uint8_t *b = malloc(bytes);
    if (!b) die("malloc");
    for (size_t i = 0; i < bytes; i++) {
      int hi = hexval(line[2 * i]), lo = hexval(line[2 * i + 1]);
      if (hi < 0 || lo < 0) {
        fprintf(stderr, "%s: not hex\n", path);
        exit(1);
      }
      b[i] = (uint8_t)(hi << 4 | lo);
    }
    d->dg = realloc(d->dg, (d->n + 1) * sizeof *d->dg);
    d->len = realloc(d->len, (d->n + 1) * sizeof *d->len);
    if (!d->dg || !d->len) die("realloc");
    d->dg[d->n] = b;
    d->len[d->n] = bytes;
    d->n++;
  }
  free(line);
  fclose(f);
}

static void load_manifest(const char *dir) {
  char path[4096], a[1024], b[1024];
  snprintf(path, sizeof path, "%s/manifest.txt", dir);
  FILE *f = fopen(path, "r");
  if (!f) die(path);
  if (fscanf(f, "%1023s", a) != 1) die("manifest: device list");
  load(dir, a, &list);
  unsigned index;
  while (ndevices < MAX_DEVICES && fscanf(f, "%u %1023s %1023s", &index, a, b) == 3) {
    devices[ndevices].index = index;
    load(dir, a, &devices[ndevices].qp);
    load(dir, b, &devices[ndevices].cm);
    ndevices++;
  }
  fclose(f);
}

static uint32_t get32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

static uint16_t get16(const uint8_t *p) {
  uint16_t v;
  memcpy(&v, p, 2);
  return v;
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/* Walks attributes in [at, end): calls fn on each (type without the nested/byte-order flags). */
#define FOR_ATTRS(p, end, a, alen, atype)                                                       \
  for (uint8_t *a = (p); a + 4 <= (end) && get16(a) >= 4 && a + get16(a) <= (end);            \
       a += (get16(a) + 3u) & ~3u)                                                              \
    for (uint16_t alen = get16(a), atype = get16(a + 2) & 0x3fff, once_ = 1; once_; once_ = 0)

/* One QP entry's PSNs moved: an even QP number sends, an odd one receives. */
static void move_entry(uint8_t *e, uint8_t *end) {
  uint32_t lqpn = 0;
  FOR_ATTRS(e, end, a, alen, atype) {
    if (atype == ATTR_LQPN && alen >= 8) lqpn = get32(a + 4);
  }
  uint16_t want = (lqpn & 1) ? ATTR_RQ_PSN : ATTR_SQ_PSN;
  FOR_ATTRS(e, end, a, alen, atype) {
    if (atype == want && alen >= 8) put32(a + 4, (get32(a + 4) + STEP) & PSN_MASK);
  }
}

static void move_psns(struct dump *d) {
  for (size_t i = 0; i < d->n; i++) {
    uint8_t *m = d->dg[i], *dend = d->dg[i] + d->len[i];
    while (m + 16 <= dend) {
      uint32_t mlen = get32(m);
      if (mlen < 16 || m + mlen > dend) break;
      uint8_t *mend = m + mlen;
      FOR_ATTRS(m + 16, mend, a, alen, atype) {
        if (atype != ATTR_RES_QP) continue;
        FOR_ATTRS(a + 4, a + alen, e, elen, etype) {
          if (etype == ATTR_RES_QP_ENTRY) move_entry(e + 4, e + elen);
        }
      }
      m += (mlen + 3u) & ~3u;
    }
  }
}

/* Every message of every datagram of `d` sent on fd with nlmsg_seq = seq. */
static void answer(int fd, struct dump *d, uint32_t seq) {
  for (size_t i = 0; i < d->n; i++) {
    uint8_t *b = d->dg[i];
    for (size_t m = 0; m + 16 <= d->len[i];) {
      uint32_t mlen = get32(b + m);
      if (mlen < 16) break;
      put32(b + m + 8, seq);
      m += (mlen + 3u) & ~3u;
    }
    ssize_t n;
    do n = send(fd, b, d->len[i], 0);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
      if (errno == EPIPE || errno == ECONNREFUSED || errno == ENOTCONN) exit(0);
      die("send");
    }
  }
}

static struct device *by_index(uint32_t index) {
  for (size_t i = 0; i < ndevices; i++)
    if (devices[i].index == index) return &devices[i];
  return NULL;
}

static int serve(int fd) {
  static uint8_t req[65536];
  for (;;) {
    ssize_t n;
    do n = recv(fd, req, sizeof req, 0);
    while (n < 0 && errno == EINTR);
    if (n == 0) return 0;
    if (n < 0) {
      if (errno == ECONNRESET || errno == ENOTCONN) return 0;
      die("recv");
    }
    if (n < 16) continue;
    uint16_t type = get16(req + 4);
    uint32_t seq = get32(req + 8);
    uint16_t cmd = type & 0x3ff;
    if ((type >> 10) != RDMA_NL_NLDEV) continue;
    if (cmd == CMD_GET) {
      answer(fd, &list, seq);
      continue;
    }
    uint32_t index = UINT32_MAX;
    FOR_ATTRS(req + 16, req + n, a, alen, atype) {
      if (atype == ATTR_DEV_INDEX && alen >= 8) index = get32(a + 4);
    }
    struct device *d = by_index(index);
    if (!d) continue;
    if (cmd == CMD_RES_QP_GET) {
      move_psns(&d->qp);
      answer(fd, &d->qp, seq);
    } else if (cmd == CMD_RES_CM_ID_GET) {
      answer(fd, &d->cm, seq);
    }
  }
}

/* One request, its whole answer read to NLMSG_DONE for its seq: the bytes received. */
static size_t transact(int fd, uint16_t cmd, uint32_t index, uint32_t seq, uint8_t *out) {
  uint8_t req[24] = {0};
  uint32_t len = index == UINT32_MAX ? 16 : 24;
  put32(req, len);
  uint16_t type = (uint16_t)(RDMA_NL_NLDEV << 10 | cmd), flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP;
  memcpy(req + 4, &type, 2);
  memcpy(req + 6, &flags, 2);
  put32(req + 8, seq);
  if (index != UINT32_MAX) {
    uint16_t alen = 8, atype = ATTR_DEV_INDEX;
    memcpy(req + 16, &alen, 2);
    memcpy(req + 18, &atype, 2);
    put32(req + 20, index);
  }
  if (send(fd, req, len, 0) != (ssize_t)len) die("send request");
  size_t at = 0;
  for (;;) {
    ssize_t n = recv(fd, out + at, ROOM - at, MSG_TRUNC);
    if (n < 0) die("recv answer");
    for (size_t m = 0; m + 16 <= (size_t)n;) {
      uint32_t mlen = get32(out + at + m);
      if (mlen < 16) break;
      if (get16(out + at + m + 4) == 3 && get32(out + at + m + 8) == seq) return at + (size_t)n;
      m += (mlen + 3u) & ~3u;
    }
    at += (size_t)n;
  }
}

static double seconds_of(struct timeval t) { return (double)t.tv_sec + (double)t.tv_usec / 1e6; }

static int floor_run(double seconds, unsigned interval_ms) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) != 0) die("socketpair");
  pid_t child = fork();
  if (child < 0) die("fork");
  if (child == 0) {
    close(sv[0]);
    exit(serve(sv[1]));
  }
  close(sv[1]);
  uint8_t *out = malloc(ROOM);
  if (!out) die("malloc");
  size_t qps = 0;
  for (size_t i = 0; i < ndevices; i++) qps += devices[i].qp.n;
  struct rusage r0, r1;
  struct timespec t0, now, next;
  getrusage(RUSAGE_SELF, &r0);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  next = t0;
  uint32_t seq = 1;
  unsigned long reads = 0;
  unsigned long long bytes = 0;
  for (;;) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 >= seconds) break;
    bytes += transact(sv[0], CMD_GET, UINT32_MAX, seq++, out);
    for (size_t i = 0; i < ndevices; i++) bytes += transact(sv[0], CMD_RES_QP_GET, devices[i].index, seq++, out);
    for (size_t i = 0; i < ndevices; i++) bytes += transact(sv[0], CMD_RES_CM_ID_GET, devices[i].index, seq++, out);
    reads++;
    next.tv_nsec += (long)interval_ms * 1000000L;
    while (next.tv_nsec >= 1000000000L) next.tv_nsec -= 1000000000L, next.tv_sec++;
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
  }
  getrusage(RUSAGE_SELF, &r1);
  close(sv[0]);
  /* A datagram socket's recv does not end when its peer closes: the child is told to stop. */
  kill(child, SIGTERM);
  waitpid(child, NULL, 0);
  double cpu = seconds_of(r1.ru_utime) - seconds_of(r0.ru_utime) + seconds_of(r1.ru_stime) - seconds_of(r0.ru_stime);
  (void)qps;
  printf("{\"seconds\":%.3f,\"intervalMs\":%u,\"reads\":%lu,\"bytes\":%llu,\"cpuSeconds\":%.6f}\n", seconds, interval_ms, reads, bytes, cpu);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "serve") == 0) {
    load_manifest(argv[3]);
    return serve(atoi(argv[2]));
  }
  if (argc == 5 && strcmp(argv[1], "floor") == 0) {
    load_manifest(argv[4]);
    return floor_run(atof(argv[2]), (unsigned)atoi(argv[3]));
  }
  fprintf(stderr, "usage: restrack-peer serve FD DIR | restrack-peer floor SECONDS INTERVAL_MS DIR\n");
  return 2;
}
