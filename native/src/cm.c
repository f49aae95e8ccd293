/* Addresses and rdma_cm: resolving ADDR[:PORT], printing addresses, waiting for one CM event. */
#include "cm.h"
#include "wire.h"

/* "host", "host:port", "[v6]", "[v6]:port"; a bare IPv6 literal (several colons) has no port. */
int resolve_addr(const char *spec, bool passive, struct sockaddr_storage *out, socklen_t *outlen, const char *opt) {
  char host[256], port[16];
  const char *colon = strrchr(spec, ':');
  snprintf(port, sizeof port, "%s", DEFAULT_PORT);
  if (spec[0] == '[') {
    const char *close = strchr(spec, ']');
    if (!close || (size_t)(close - spec - 1) >= sizeof host) {
      errf("%s '%s': bad bracketed address", opt, spec);
      return -1;
    }
    memcpy(host, spec + 1, (size_t)(close - spec - 1));
    host[close - spec - 1] = '\0';
    if (close[1] == ':') snprintf(port, sizeof port, "%s", close + 2);
    else if (close[1]) {
      errf("%s '%s': bad bracketed address", opt, spec);
      return -1;
    }
  } else if (colon && strchr(spec, ':') == colon) {
    if ((size_t)(colon - spec) >= sizeof host) {
      errf("%s '%s': host too long", opt, spec);
      return -1;
    }
    memcpy(host, spec, (size_t)(colon - spec));
    host[colon - spec] = '\0';
    snprintf(port, sizeof port, "%s", colon + 1);
  } else {
    if (strlen(spec) >= sizeof host) {
      errf("%s '%s': host too long", opt, spec);
      return -1;
    }
    strcpy(host, spec);
  }
  uint64_t pnum;
  if (parse_u64(port, &pnum) || pnum > 65535) {
    errf("%s '%s': port must be 0..65535", opt, spec);
    return -1;
  }
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  int rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
  if (rc) {
    errf("%s '%s': cannot resolve '%s': %s", opt, spec, host, gai_strerror(rc));
    return -1;
  }
  memcpy(out, res->ai_addr, res->ai_addrlen);
  *outlen = res->ai_addrlen;
  freeaddrinfo(res);
  return 0;
}

const char *addr_str(const struct sockaddr *sa, char *buf, size_t len) {
  char host[INET6_ADDRSTRLEN];
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *in = (const void *)sa;
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    snprintf(buf, len, "%s:%u", host, ntohs(in->sin_port));
  } else if (sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *in6 = (const void *)sa;
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    snprintf(buf, len, "[%s]:%u", host, ntohs(in6->sin6_port));
  } else {
    snprintf(buf, len, "(family %d)", sa->sa_family);
  }
  return buf;
}

int mtu_bytes(enum ibv_mtu m) {
  switch (m) {
    case IBV_MTU_256:
      return 256;
    case IBV_MTU_512:
      return 512;
    case IBV_MTU_1024:
      return 1024;
    case IBV_MTU_2048:
      return 2048;
    case IBV_MTU_4096:
      return 4096;
  }
  return 0;
}

/* ---------------------------------------------------------------- rdma_cm helpers */

/*
 * Waits for the next event on a (per-flow) channel. On success *ev must be acked by the caller.
 * Returns -1 with a message on timeout, error, or an event other than `want`.
 */
int wait_cm_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want, struct rdma_cm_event **ev, const char *who,
                  const char *step) {
  struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
  int64_t deadline = now_ns() + (int64_t)CM_TIMEOUT_MS * 1000000;
  for (;;) {
    int64_t left = deadline - now_ns();
    if (left <= 0) {
      errf("%s: %s: no rdma_cm event within %d ms", who, step, CM_TIMEOUT_MS);
      return -1;
    }
    if (atomic_load(&g_stop)) {
      errf("%s: %s: interrupted", who, step);
      return -1;
    }
    int n = poll(&pfd, 1, left > 200000000 ? 200 : (int)(left / 1000000) + 1);
    if (n < 0 && errno != EINTR) {
      errf("%s: %s: poll: %s", who, step, strerror(errno));
      return -1;
    }
    if (n > 0) break;
  }
  if (rdma_get_cm_event(ch, ev)) {
    errf("%s: %s: rdma_get_cm_event: %s", who, step, strerror(errno));
    return -1;
  }
  if ((*ev)->event == want && (*ev)->status == 0) return 0;

  const struct rdma_cm_event *e = *ev;
  if (e->event == RDMA_CM_EVENT_REJECTED) {
    const struct wire_rep *rep = e->param.conn.private_data;
    if (rep && e->param.conn.private_data_len >= sizeof *rep && be32toh(rep->magic) == WIRE_MAGIC && rep->status)
      errf("%s: %s: receiver rejected the flow: %s", who, step, strerror((int)be32toh(rep->status)));
    else if (e->status == 8) /* IB CM reject reason 8: invalid service ID */
      errf("%s: %s: connection rejected: nothing listens on that address and port "
           "(CM reject reason 8)",
           who, step);
    else errf("%s: %s: connection rejected (CM reject reason %d)", who, step, e->status);
  } else {
    errf("%s: %s: got %s (status %d: %s) instead of %s", who, step, rdma_event_str(e->event), e->status,
         e->status < 0 ? strerror(-e->status) : "see rdma_cm(7)", rdma_event_str(want));
  }
  rdma_ack_cm_event(*ev);
  *ev = NULL;
  return -1;
}

void release_conn(struct rdma_cm_id **id, struct ibv_mr **mr, struct ibv_cq **cq, struct ibv_comp_channel **cc, struct ibv_pd **pd,
                  void **buf) {
  if (*id && (*id)->qp) rdma_destroy_qp(*id);
  if (*mr) ibv_dereg_mr(*mr);
  if (*cq) ibv_destroy_cq(*cq);
  if (*cc) ibv_destroy_comp_channel(*cc);
  if (*pd) ibv_dealloc_pd(*pd);
  if (*id) rdma_destroy_id(*id);
  free(*buf);
  *id = NULL;
  *mr = NULL;
  *cq = NULL;
  *cc = NULL;
  *pd = NULL;
  *buf = NULL;
}
