/*
 * libmfe-reader's operations (mfe-reader.h: enum mfr_op_kind): what one op of a request does on
 * the thread that runs it, the same on a reader thread (mfe-reader.c) and with mfr_run_sync().
 * Each writes its status and output length into its mfr_result; nothing here blocks but the
 * system call the op is.
 */
#define _GNU_SOURCE
#include "mfe-reader.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static int64_t neg_errno(void) { return -(int64_t)errno; }

static int64_t read_fd(int fd, uint8_t *out, uint32_t cap) {
  ssize_t n;
  do n = read(fd, out, cap);
  while (n < 0 && errno == EINTR);
  return n < 0 ? neg_errno() : n;
}

static int64_t op_read_file(const char *path, uint32_t flags, uint8_t *out, uint32_t cap) {
  int fd;
  do fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (int)flags);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) return neg_errno();
  uint32_t got = 0;
  int64_t rc = 0;
  while (got < cap) {
    int64_t n = read_fd(fd, out + got, cap - got);
    if (n < 0) {
      rc = n;
      break;
    }
    if (n == 0) break;
    got += (uint32_t)n;
  }
  close(fd);
  return rc < 0 ? rc : got;
}

static int64_t op_read_dir(const char *path, uint8_t *out, uint32_t cap, uint32_t *len) {
  DIR *d = opendir(path);
  if (!d) return neg_errno();
  int64_t count = 0;
  uint32_t at = 0;
  struct dirent *e;
  errno = 0;
  while ((e = readdir(d)) != NULL) {
    const char *name = e->d_name;
    if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
    size_t l = strlen(name) + 1;
    if (at + l > cap) {
      count = -ENOBUFS;
      break;
    }
    memcpy(out + at, name, l);
    at += (uint32_t)l;
    count++;
  }
  if (count >= 0 && errno != 0) count = neg_errno();
  closedir(d);
  *len = at;
  return count;
}

static int is_space(uint8_t c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* A counter's text as a u64 at out (src/reads/counter-bytes.ts parseCounterBytes() is the same rule). */
static int64_t op_pread_counter(const struct mfr_op *op, uint8_t *out, uint32_t *len) {
  ssize_t n;
  do n = pread(op->fd, out, op->out_cap, op->offset);
  while (n < 0 && errno == EINTR);
  if (n < 0) return neg_errno();
  *len = (uint32_t)n;
  size_t s = 0, e = (size_t)n;
  while (s < e && is_space(out[s])) s++;
  while (e > s && is_space(out[e - 1])) e--;
  if (e - s < 1 || e - s > 20) return -EILSEQ;
  uint64_t v = 0;
  for (size_t i = s; i < e; i++) {
    unsigned d = (unsigned)out[i] - '0';
    if (d > 9 || v > (UINT64_MAX - d) / 10) return -EILSEQ;
    v = v * 10 + d;
  }
  memcpy(out, &v, sizeof v);
  *len = sizeof v;
  return n;
}

static int64_t op_stat(const char *path, uint8_t *out) {
  struct stat st;
  if (stat(path, &st) < 0) return neg_errno();
  struct mfr_stat s = {(uint64_t)st.st_dev, (uint64_t)st.st_ino, (uint32_t)st.st_mode, 0, (uint64_t)st.st_size};
  memcpy(out, &s, sizeof s);
  return 0;
}

/*
 * One netlink request and its whole answer, in one op so that requests on one socket never
 * interleave: NLMSG_ERROR (an ACK or an error) or NLMSG_DONE for the request's seq ends it:
 * the rule of src/reads/netlink-answer.ts, which direct.ts and ReplyCollector follow. Messages for other seqs (a late answer
 * to a request given up earlier) are kept for the caller to skip.
 */
#define NLMSG_ERROR_TYPE 2
#define NLMSG_DONE_TYPE 3
#define NL_MAX_DATAGRAMS 4096

static int64_t op_nl_transact(int fd, const uint8_t *req, uint32_t req_len, uint8_t *out, uint32_t cap, uint32_t *len) {
  if (req_len < 16) return -EINVAL;
  uint32_t seq;
  memcpy(&seq, req + 8, 4);
  ssize_t n;
  do n = send(fd, req, req_len, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n < 0) return neg_errno();
  if ((uint32_t)n != req_len) return -EIO;
  uint32_t at = 0;
  for (int d = 0; d < NL_MAX_DATAGRAMS; d++) {
    if (cap - at < 4) return -ENOBUFS;
    uint8_t *dg = out + at + 4;
    do n = recv(fd, dg, cap - at - 4, MSG_TRUNC);
    while (n < 0 && errno == EINTR);
    if (n < 0) return neg_errno();
    if ((uint32_t)n > cap - at - 4) return -ENOBUFS;
    uint32_t dlen = (uint32_t)n;
    memcpy(out + at, &dlen, 4);
    at += 4 + dlen;
    *len = at;
    for (uint32_t m = 0; m + 16 <= dlen;) {
      uint32_t mlen, mseq;
      uint16_t mtype;
      memcpy(&mlen, dg + m, 4);
      memcpy(&mtype, dg + m + 4, 2);
      memcpy(&mseq, dg + m + 8, 4);
      if (mlen < 16) break;
      if (mseq == seq && (mtype == NLMSG_ERROR_TYPE || mtype == NLMSG_DONE_TYPE)) return at;
      m += (mlen + 3u) & ~3u;
    }
  }
  return -EPROTO;
}

void mfr_run_op(const struct mfr_op *op, const uint8_t *request, uint8_t *data, struct mfr_result *res) {
  uint8_t *out = data + res->out_off;
  const char *path = (const char *)request + op->in_off;
  uint32_t len = 0;
  int64_t s;
  switch (op->kind) {
    case MFR_PREAD:
      do s = pread(op->fd, out, op->out_cap, op->offset);
      while (s < 0 && errno == EINTR);
      if (s < 0) s = neg_errno();
      break;
    case MFR_READ:
      s = read_fd(op->fd, out, op->out_cap);
      break;
    case MFR_READ_FILE:
      s = op_read_file(path, op->flags, out, op->out_cap);
      break;
    case MFR_READ_DIR:
      s = op_read_dir(path, out, op->out_cap, &len);
      break;
    case MFR_READ_LINK:
      s = readlink(path, (char *)out, op->out_cap);
      if (s < 0) s = neg_errno();
      break;
    case MFR_STAT:
      s = op_stat(path, out);
      if (s == 0) len = sizeof(struct mfr_stat);
      break;
    case MFR_OPEN:
      do s = open(path, (int)op->flags | O_CLOEXEC);
      while (s < 0 && errno == EINTR);
      if (s < 0) s = neg_errno();
      break;
    case MFR_SEND:
      do s = send(op->fd, request + op->in_off, op->in_len, MSG_NOSIGNAL);
      while (s < 0 && errno == EINTR);
      if (s < 0) s = neg_errno();
      break;
    case MFR_RECV:
      do s = recv(op->fd, out, op->out_cap, MSG_TRUNC);
      while (s < 0 && errno == EINTR);
      if (s < 0) s = neg_errno();
      else len = (uint32_t)(s < op->out_cap ? s : op->out_cap);
      break;
    case MFR_IOCTL: {
      memcpy(out, request + op->in_off, op->in_len < op->out_cap ? op->in_len : op->out_cap);
      if (op->fix_at != MFR_NO_FIX) {
        void *target = out + op->fix_to;
        memcpy(out + op->fix_at, &target, sizeof target);
      }
      s = ioctl(op->fd, (unsigned long)op->offset, out);
      if (s < 0) s = neg_errno();
      len = op->out_cap;
      break;
    }
    case MFR_NL_TRANSACT:
      s = op_nl_transact(op->fd, request + op->in_off, op->in_len, out, op->out_cap, &len);
      break;
    case MFR_PREAD_COUNTER:
      s = op_pread_counter(op, out, &len);
      res->out_len = len; /* on -EILSEQ: the text read */
      res->status = s;
      return;
    case MFR_VERBS_OPEN:
    case MFR_VERBS_QUERY_PORT:
    case MFR_VERBS_QUERY_GIDS:
      s = mfr_verbs_op(op, out, &len);
      res->out_len = len; /* on failure: the loader's message, if any */
      res->status = s;
      return;
    default:
      s = -EINVAL;
  }
  if (op->kind == MFR_PREAD || op->kind == MFR_READ || op->kind == MFR_READ_FILE || op->kind == MFR_READ_LINK) {
    len = s > 0 ? (uint32_t)s : 0;
  }
  res->out_len = s < 0 && op->kind != MFR_READ_DIR && op->kind != MFR_NL_TRANSACT ? 0 : len;
  res->status = s;
}
