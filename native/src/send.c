/*
 * The sending role's RDMA side: connect a flow (one RC QP, a registered source buffer), post the
 * writes of each event on schedule, reap completions.
 */
#include "send.h"
#include "cm.h"
#include "schedule.h"
#include "wire.h"

/* wr_id = grain index, with this bit on the last write of the grain (the one that completes it). */
#define EVENT_END ((uint64_t)1 << 63)

static void flow_fail(struct flow *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void flow_fail(struct flow *f, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->errmsg, sizeof f->errmsg, fmt, ap);
  va_end(ap);
  f->failed = true;
}


int sender_setup(struct flow *f, const struct sockaddr *src, const struct sockaddr *dst) {
  struct rdma_cm_event *ev = NULL;
  char who[FLOW_ID_MAX + 16];
  snprintf(who, sizeof who, "flow %.*s", FLOW_ID_MAX, f->id);

  f->ch = rdma_create_event_channel();
  if (!f->ch) {
    errf("%s: rdma_create_event_channel: %s (is rdma_ucm loaded and /dev/infiniband/rdma_cm "
         "accessible?)",
         who, strerror(errno));
    return -1;
  }
  if (rdma_create_id(f->ch, &f->cm, f, RDMA_PS_TCP)) {
    errf("%s: rdma_create_id: %s", who, strerror(errno));
    return -1;
  }
  if (rdma_resolve_addr(f->cm, (struct sockaddr *)src, (struct sockaddr *)dst, 5000)) {
    errf("%s: rdma_resolve_addr: %s", who, strerror(errno));
    return -1;
  }
  if (wait_cm_event(f->ch, RDMA_CM_EVENT_ADDR_RESOLVED, &ev, who, "address resolution")) return -1;
  rdma_ack_cm_event(ev);
  if (rdma_resolve_route(f->cm, 5000)) {
    errf("%s: rdma_resolve_route: %s", who, strerror(errno));
    return -1;
  }
  if (wait_cm_event(f->ch, RDMA_CM_EVENT_ROUTE_RESOLVED, &ev, who, "route resolution")) return -1;
  rdma_ack_cm_event(ev);

  snprintf(f->device, sizeof f->device, "%s", ibv_get_device_name(f->cm->verbs->device));
  f->pd = ibv_alloc_pd(f->cm->verbs);
  if (!f->pd) {
    errf("%s: ibv_alloc_pd on %s: %s", who, f->device, strerror(errno));
    return -1;
  }
  f->cc = ibv_create_comp_channel(f->cm->verbs);
  if (!f->cc || set_nonblock(f->cc->fd)) {
    errf("%s: ibv_create_comp_channel: %s", who, strerror(errno));
    return -1;
  }
  f->cq = ibv_create_cq(f->cm->verbs, (int)f->depth + 1, f, f->cc, 0);
  if (!f->cq) {
    errf("%s: ibv_create_cq (%u entries): %s", who, f->depth + 1, strerror(errno));
    return -1;
  }
  uint64_t source = plan_source_bytes(&f->plan);
  if (posix_memalign(&f->buf, 4096, source)) {
    errf("%s: cannot allocate a %" PRIu64 "-byte source buffer", who, source);
    return -1;
  }
  /* Nonzero pattern so a receiver dump shows which flow wrote it. */
  memset(f->buf, 0xa0 + (int)(f->index & 0x0f), source);
  f->mr = ibv_reg_mr(f->pd, f->buf, source, IBV_ACCESS_LOCAL_WRITE);
  if (!f->mr) {
    errf("%s: ibv_reg_mr (%" PRIu64 " bytes): %s%s", who, source, strerror(errno),
         errno == ENOMEM || errno == EPERM ? " (check ulimit -l / RLIMIT_MEMLOCK)" : "");
    return -1;
  }
  struct ibv_qp_init_attr qa;
  memset(&qa, 0, sizeof qa);
  qa.send_cq = f->cq;
  qa.recv_cq = f->cq;
  qa.qp_type = IBV_QPT_RC;
  qa.sq_sig_all = 0;
  qa.cap.max_send_wr = f->depth;
  qa.cap.max_recv_wr = 1;
  qa.cap.max_send_sge = plan_max_entries(&f->plan);
  qa.cap.max_recv_sge = 1;
  if (rdma_create_qp(f->cm, f->pd, &qa)) {
    errf("%s: rdma_create_qp: %s", who, strerror(errno));
    return -1;
  }

  struct wire_req req;
  memset(&req, 0, sizeof req);
  req.magic = htobe32(WIRE_MAGIC);
  req.version = htobe16(WIRE_VERSION);
  req.flow_index = htobe16((uint16_t)f->index);
  req.write_bytes = htobe64(plan_event_bytes(&f->plan));
  size_t idlen = strnlen(f->id, sizeof req.flow_id);
  memcpy(req.flow_id, f->id, idlen); /* truncated on the wire, see wire_req */

  struct rdma_conn_param cp;
  memset(&cp, 0, sizeof cp);
  cp.private_data = &req;
  cp.private_data_len = sizeof req;
  cp.retry_count = 7;
  cp.rnr_retry_count = 7; /* 7 = retry forever on receiver-not-ready */
  if (rdma_connect(f->cm, &cp)) {
    errf("%s: rdma_connect: %s", who, strerror(errno));
    return -1;
  }
  if (wait_cm_event(f->ch, RDMA_CM_EVENT_ESTABLISHED, &ev, who, "connect")) return -1;
  const struct wire_rep *rep = ev->param.conn.private_data;
  if (!rep || ev->param.conn.private_data_len < sizeof *rep || be32toh(rep->magic) != WIRE_MAGIC) {
    errf("%s: connect: the peer is not an mxl-loadgen receiver (no or bad accept data)", who);
    rdma_ack_cm_event(ev);
    return -1;
  }
  f->raddr = be64toh(rep->addr);
  f->rkey = be32toh(rep->rkey);
  rdma_ack_cm_event(ev);

  struct ibv_qp_attr attr;
  struct ibv_qp_init_attr init;
  if (ibv_query_qp(f->cm->qp, &attr, IBV_QP_PATH_MTU, &init) == 0) f->path_mtu = mtu_bytes(attr.path_mtu);
  return 0;
}

void sender_teardown(struct flow *f, bool disconnect) {
  if (f->cm && disconnect && f->cm->qp) {
    struct rdma_cm_event *ev;
    if (rdma_disconnect(f->cm) == 0) {
      /* Best effort: a missing DISCONNECTED event must not turn a good run into a failure. */
      struct pollfd pfd = {.fd = f->ch->fd, .events = POLLIN};
      if (poll(&pfd, 1, 5000) > 0 && rdma_get_cm_event(f->ch, &ev) == 0) rdma_ack_cm_event(ev);
    }
  }
  release_conn(&f->cm, &f->mr, &f->cq, &f->cc, &f->pd, &f->buf);
  if (f->ch) rdma_destroy_event_channel(f->ch);
  f->ch = NULL;
}

/*
 * Reaps send completions. With block set, waits until at least one arrives or until
 * deadline (absolute ns; 0 = wait while not stopped). Returns completions reaped, or -1.
 */
static int reap_sends(struct flow *f, bool block, int64_t deadline) {
  struct ibv_wc wc[16];
  bool armed = false;
  for (;;) {
    int n = ibv_poll_cq(f->cq, 16, wc);
    if (n < 0) {
      flow_fail(f, "ibv_poll_cq failed");
      return -1;
    }
    for (int i = 0; i < n; i++) {
      f->outstanding--;
      if (wc[i].status != IBV_WC_SUCCESS) {
        flow_fail(f, "RDMA WRITE of grain %" PRIu64 " completed with %s (vendor_err 0x%x)", (uint64_t)(wc[i].wr_id & ~EVENT_END),
                  ibv_wc_status_str(wc[i].status), wc[i].vendor_err);
        return -1;
      }
      if (wc[i].wr_id & EVENT_END) f->completed++;
    }
    if (n > 0 || !block) return n;
    if (!armed) {
      if (ibv_req_notify_cq(f->cq, 0)) {
        flow_fail(f, "ibv_req_notify_cq failed");
        return -1;
      }
      armed = true;
      continue; /* poll again: a completion may have landed before arming */
    }
    int64_t now = now_ns();
    if (deadline && now >= deadline) {
      flow_fail(f, "timed out waiting for send completions (%u outstanding)", f->outstanding);
      return -1;
    }
    if (!deadline && atomic_load(&g_stop)) return 0;
    struct pollfd pfd = {.fd = f->cc->fd, .events = POLLIN};
    int r = poll(&pfd, 1, 200);
    if (r < 0 && errno != EINTR) {
      flow_fail(f, "poll on completion channel: %s", strerror(errno));
      return -1;
    }
    if (r > 0) {
      struct ibv_cq *cq;
      void *ctx;
      if (ibv_get_cq_event(f->cc, &cq, &ctx) == 0) {
        ibv_ack_cq_events(cq, 1);
        armed = false;
      }
    }
  }
}

static void account_post(struct flow *f, uint64_t k, int64_t due, int64_t post) {
  int64_t late = post - due;
  int64_t period = due_offset_ns(k + 1, f->num, f->den) - due_offset_ns(k, f->num, f->den);
  if (late > period) f->late++;
  if (late > f->max_late_ns) f->max_late_ns = late;
  f->sum_late_ns += (long double)late;
  if (f->posted == 1) f->first_post_ns = post;
  f->last_post_ns = post;
}

/* Posts the writes of event k (one work request each, all signalled, as MXL asks FI_DELIVERY_COMPLETE). */
static int post_event(struct flow *f, uint64_t k, const struct event *ev) {
  struct ibv_sge sge[MAX_ENTRIES];
  for (unsigned i = 0; i < ev->nentries; i++)
    sge[i] =
        (struct ibv_sge){.addr = (uintptr_t)f->buf + ev->entries[i].offset, .length = (uint32_t)ev->entries[i].length, .lkey = f->mr->lkey};
  for (unsigned w = 0; w < ev->nwrites; w++) {
    const struct event_write *ew = &ev->writes[w];
    struct ibv_send_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = k | (w + 1 == ev->nwrites ? EVENT_END : 0);
    wr.sg_list = &sge[ew->first_entry];
    wr.num_sge = (int)ew->nentries;
    wr.opcode = ew->immediate ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htobe32((uint32_t)k);
    wr.wr.rdma.remote_addr = f->raddr + ew->remote_offset;
    wr.wr.rdma.rkey = f->rkey;
    int rc = ibv_post_send(f->cm->qp, &wr, &bad);
    if (rc) {
      flow_fail(f, "ibv_post_send (grain %" PRIu64 ", write %u of %u): %s", k, w + 1, ev->nwrites, strerror(rc));
      return -1;
    }
    f->outstanding++;
  }
  f->writes_sent += ev->nwrites;
  f->packets_sent += event_packets(ev, f->path_mtu);
  f->wraps += ev->wrapped;
  return 0;
}

void *sender_thread(void *arg) {
  struct flow *f = arg;
  struct event ev;

  for (uint64_t k = 0; k < f->expected; k++) {
    int64_t due = f->t0 + due_offset_ns(k, f->num, f->den);
    sleep_until(due);
    if (atomic_load(&g_stop)) break;
    if (f->pace_only) {
      int64_t post = now_ns();
      f->posted++;
      f->completed++;
      account_post(f, k, due, post);
      continue;
    }
    plan_event(&f->plan, f->head, &ev);
    f->head += f->plan.al.samples;
    if (reap_sends(f, false, 0) < 0) return NULL;
    while (f->outstanding + ev.nwrites > f->depth) {
      if (reap_sends(f, true, 0) < 0) return NULL;
      if (atomic_load(&g_stop)) goto drain;
    }
    int64_t post = now_ns();
    if (post_event(f, k, &ev)) goto drain;
    f->posted++;
    account_post(f, k, due, post);
  }
drain:;
  int64_t deadline = now_ns() + DRAIN_TIMEOUT_NS;
  while (f->outstanding > 0) {
    if (reap_sends(f, true, deadline) < 0) break;
  }
  return NULL;
}
