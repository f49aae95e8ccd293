/*
 * The receiving role: one RC connection per flow, a target region per flow (all writes of one
 * event land in it back to back), and a count of the write-with-immediate completions, one per event.
 */
#include "flow.h"
#include "cm.h"
#include "schedule.h"
#include "wire.h"

enum conn_state { CONN_FREE, CONN_PENDING, CONN_UP, CONN_CLOSED };

struct conn {
  enum conn_state state;
  struct rdma_cm_id *id;
  struct ibv_pd *pd;
  struct ibv_comp_channel *cc;
  struct ibv_cq *cq;
  struct ibv_mr *mr;
  void *buf;
  uint64_t write_bytes;
  unsigned flow_index;
  char flow_id[WIRE_ID_LEN + 1];
  char peer[80];
  char device[64];

  uint64_t grains, bytes, gaps, reordered, size_mismatch, errors;
  uint32_t next_imm;
  int64_t first_ns, last_ns, up_ns, down_ns;
};

static struct conn g_conns[MAX_CONNS];
static size_t g_nconns;
static bool g_serve_error;

static void conn_release(struct conn *c) { release_conn(&c->id, &c->mr, &c->cq, &c->cc, &c->pd, &c->buf); }

static int post_recvs(struct conn *c, int n) {
  /* Write-with-imm consumes a receive WQE but places no data in it: zero SGEs. */
  for (int i = 0; i < n; i++) {
    struct ibv_recv_wr wr, *bad;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = (uintptr_t)c;
    int rc = ibv_post_recv(c->id->qp, &wr, &bad);
    if (rc) {
      errf("flow %s: ibv_post_recv: %s", c->flow_id, strerror(rc));
      return -1;
    }
  }
  return 0;
}

static void conn_poll(struct conn *c, bool closing) {
  struct ibv_wc wc[32];
  int n;
  while ((n = ibv_poll_cq(c->cq, 32, wc)) > 0) {
    int repost = 0;
    for (int i = 0; i < n; i++) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        if (wc[i].status == IBV_WC_WR_FLUSH_ERR) continue; /* the QP went to error; the cause is reported by rdma_cm */
        errf("flow %s: receive completion error: %s (vendor_err 0x%x)", c->flow_id, ibv_wc_status_str(wc[i].status), wc[i].vendor_err);
        c->errors++;
        g_serve_error = true;
        continue;
      }
      if (wc[i].opcode != IBV_WC_RECV_RDMA_WITH_IMM) {
        c->errors++;
        continue;
      }
      int64_t t = now_ns();
      uint32_t imm = be32toh(wc[i].imm_data);
      if (c->grains == 0) c->first_ns = t;
      else if (imm != c->next_imm) {
        uint32_t skip = imm - c->next_imm;
        if (skip < 0x80000000u) c->gaps += skip;
        else c->reordered++;
      }
      c->next_imm = imm + 1;
      c->last_ns = t;
      c->grains++;
      /* The write with immediate data ends the event; the others came before it into the same region. */
      c->bytes += c->write_bytes;
      if (wc[i].byte_len > c->write_bytes) c->size_mismatch++;
      repost++;
    }
    if (repost && !closing && post_recvs(c, repost)) g_serve_error = true;
  }
}

static void conn_on_cq_event(struct conn *c) {
  struct ibv_cq *cq;
  void *ctx;
  while (ibv_get_cq_event(c->cc, &cq, &ctx) == 0) {
    ibv_ack_cq_events(cq, 1);
    if (ibv_req_notify_cq(cq, 0)) errf("flow %s: ibv_req_notify_cq: %s", c->flow_id, strerror(errno));
  }
  conn_poll(c, false);
}

/* Answers a connection request with an error status (the sender prints it) and acknowledges the
 * CM event; the caller still owns the request's id. */
static void reject_request(struct rdma_cm_event *ev, struct wire_rep *rep, int err) {
  rep->status = htobe32((uint32_t)err);
  rdma_reject(ev->id, rep, sizeof *rep);
  rdma_ack_cm_event(ev);
}

static void handle_connect_request(struct rdma_cm_event *ev) {
  struct rdma_cm_id *id = ev->id;
  const struct wire_req *req = ev->param.conn.private_data;
  struct wire_rep rep;
  memset(&rep, 0, sizeof rep);
  rep.magic = htobe32(WIRE_MAGIC);
  char peer[80];
  addr_str(rdma_get_peer_addr(id), peer, sizeof peer);

  if (!req || ev->param.conn.private_data_len < sizeof *req || be32toh(req->magic) != WIRE_MAGIC || be16toh(req->version) != WIRE_VERSION) {
    errf("serve: connection from %s is not an mxl-loadgen v%d sender; rejecting", peer, WIRE_VERSION);
    reject_request(ev, &rep, EPROTO);
    rdma_destroy_id(id);
    return;
  }
  if (g_nconns >= MAX_CONNS) {
    errf("serve: more than %d connections in this run; rejecting %s", MAX_CONNS, peer);
    reject_request(ev, &rep, ENOSPC);
    rdma_destroy_id(id);
    return;
  }
  struct conn *c = &g_conns[g_nconns++];
  memset(c, 0, sizeof *c);
  c->state = CONN_PENDING;
  c->id = id;
  id->context = c;
  c->write_bytes = be64toh(req->write_bytes);
  c->flow_index = be16toh(req->flow_index);
  memcpy(c->flow_id, req->flow_id, WIRE_ID_LEN);
  c->flow_id[WIRE_ID_LEN] = '\0';
  for (char *p = c->flow_id; *p; p++)
    if ((unsigned char)*p < 0x20) *p = '?';
  snprintf(c->peer, sizeof c->peer, "%s", peer);
  snprintf(c->device, sizeof c->device, "%s", ibv_get_device_name(id->verbs->device));

  const char *step = NULL;
  int err = 0;
  if (c->write_bytes == 0 || c->write_bytes > MAX_WRITE_BYTES) {
    step = "write size check";
    err = EINVAL;
    goto reject;
  }
  if (!(c->pd = ibv_alloc_pd(id->verbs))) {
    step = "ibv_alloc_pd";
    goto reject_errno;
  }
  if (!(c->cc = ibv_create_comp_channel(id->verbs)) || set_nonblock(c->cc->fd)) {
    step = "ibv_create_comp_channel";
    goto reject_errno;
  }
  if (!(c->cq = ibv_create_cq(id->verbs, RECV_DEPTH + 1, c, c->cc, 0))) {
    step = "ibv_create_cq";
    goto reject_errno;
  }
  if (ibv_req_notify_cq(c->cq, 0)) {
    step = "ibv_req_notify_cq";
    goto reject_errno;
  }
  if (posix_memalign(&c->buf, 4096, c->write_bytes)) {
    step = "allocating the target buffer";
    err = ENOMEM;
    goto reject;
  }
  memset(c->buf, 0, c->write_bytes);
  if (!(c->mr = ibv_reg_mr(c->pd, c->buf, c->write_bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE))) {
    step = "ibv_reg_mr (check ulimit -l for large buffers)";
    goto reject_errno;
  }
  struct ibv_qp_init_attr qa;
  memset(&qa, 0, sizeof qa);
  qa.send_cq = c->cq;
  qa.recv_cq = c->cq;
  qa.qp_type = IBV_QPT_RC;
  qa.cap.max_send_wr = 1;
  qa.cap.max_recv_wr = RECV_DEPTH;
  qa.cap.max_send_sge = 1;
  qa.cap.max_recv_sge = 1;
  if (rdma_create_qp(id, c->pd, &qa)) {
    step = "rdma_create_qp";
    goto reject_errno;
  }
  if (post_recvs(c, RECV_DEPTH)) {
    step = "ibv_post_recv";
    err = EIO;
    goto reject;
  }
  rep.addr = htobe64((uintptr_t)c->buf);
  rep.rkey = htobe32(c->mr->rkey);
  struct rdma_conn_param cp;
  memset(&cp, 0, sizeof cp);
  cp.private_data = &rep;
  cp.private_data_len = sizeof rep;
  cp.rnr_retry_count = 7;
  if (rdma_accept(id, &cp)) {
    errf("serve: flow %s from %s: rdma_accept: %s", c->flow_id, peer, strerror(errno));
    rdma_ack_cm_event(ev);
    conn_release(c);
    c->state = CONN_CLOSED;
    g_serve_error = true;
    return;
  }
  rdma_ack_cm_event(ev);
  fprintf(stderr, "%s: flow %s (index %u, %" PRIu64 " bytes/write) from %s on %s: accepted\n", g_prog, c->flow_id, c->flow_index,
          c->write_bytes, peer, c->device);
  return;

reject_errno:
  err = errno ? errno : EIO;
reject:
  errf("serve: flow %s from %s: %s: %s; rejecting", c->flow_id, peer, step, strerror(err));
  reject_request(ev, &rep, err);
  conn_release(c);
  c->state = CONN_CLOSED;
  g_serve_error = true;
}

static int handle_cm_event(struct rdma_event_channel *ch, struct rdma_cm_id *listen_id, bool *fatal) {
  struct rdma_cm_event *ev;
  if (rdma_get_cm_event(ch, &ev)) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    errf("serve: rdma_get_cm_event: %s", strerror(errno));
    *fatal = true;
    return -1;
  }
  enum rdma_cm_event_type type = ev->event;
  if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
    handle_connect_request(ev);
    return 1;
  }
  if (ev->id == listen_id) {
    if (type == RDMA_CM_EVENT_DEVICE_REMOVAL || type == RDMA_CM_EVENT_ADDR_CHANGE) {
      errf("serve: listener: %s", rdma_event_str(type));
      *fatal = true;
    }
    rdma_ack_cm_event(ev);
    return 1;
  }
  struct conn *c = ev->id->context;
  int status = ev->status;
  rdma_ack_cm_event(ev);
  if (!c) return 1;
  switch (type) {
    case RDMA_CM_EVENT_ESTABLISHED:
      c->state = CONN_UP;
      c->up_ns = now_ns();
      break;
    case RDMA_CM_EVENT_DISCONNECTED:
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_REJECTED:
      if (type != RDMA_CM_EVENT_DISCONNECTED) {
        errf("serve: flow %s: %s (status %d)", c->flow_id, rdma_event_str(type), status);
        g_serve_error = true;
      }
      if (c->state == CONN_CLOSED) break;
      if (type == RDMA_CM_EVENT_DISCONNECTED) rdma_disconnect(c->id);
      conn_poll(c, true);
      c->down_ns = now_ns();
      conn_release(c);
      c->state = CONN_CLOSED;
      fprintf(stderr, "%s: flow %s: closed after %" PRIu64 " grains\n", g_prog, c->flow_id, c->grains);
      break;
    default:
      break;
  }
  return 1;
}

static double conn_rate(const struct conn *c) {
  if (c->grains < 2 || c->last_ns <= c->first_ns) return 0.0;
  return (double)(c->grains - 1) * 1e9 / (double)(c->last_ns - c->first_ns);
}

static void print_serve_report(bool json) {
  uint64_t tg = 0, tb = 0, tgap = 0, terr = 0;
  for (size_t i = 0; i < g_nconns; i++) {
    tg += g_conns[i].grains;
    tb += g_conns[i].bytes;
    tgap += g_conns[i].gaps;
    terr += g_conns[i].errors + g_conns[i].size_mismatch;
  }
  FILE *o = stdout;
  if (json) {
    fprintf(o, "{\"role\":\"serve\",\"version\":\"%s\",\"flows\":[", LOADGEN_VERSION);
    for (size_t i = 0; i < g_nconns; i++) {
      struct conn *c = &g_conns[i];
      fprintf(o, "%s{\"flowId\":", i ? "," : "");
      json_str(o, c->flow_id);
      fprintf(o, ",\"flowIndex\":%u,\"writeBytes\":%" PRIu64 ",\"peer\":", c->flow_index, c->write_bytes);
      json_str(o, c->peer);
      fprintf(o, ",\"device\":");
      json_str(o, c->device);
      fprintf(o,
              ",\"grainsReceived\":%" PRIu64 ",\"bytesReceived\":%" PRIu64 ",\"missingGrains\":%" PRIu64 ",\"reorderedGrains\":%" PRIu64
              ",\"sizeMismatches\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"receivedRate\":%.6f}",
              c->grains, c->bytes, c->gaps, c->reordered, c->size_mismatch, c->errors, conn_rate(c));
    }
    fprintf(o,
            "],\"totals\":{\"grainsReceived\":%" PRIu64 ",\"bytesReceived\":%" PRIu64 ",\"missingGrains\":%" PRIu64 ",\"errors\":%" PRIu64
            "}}\n",
            tg, tb, tgap, terr);
  } else {
    for (size_t i = 0; i < g_nconns; i++) {
      struct conn *c = &g_conns[i];
      fprintf(o,
              "flow %s: %" PRIu64 " grains, %" PRIu64 " bytes, missing %" PRIu64 ", reordered %" PRIu64 ", size mismatches %" PRIu64
              ", errors %" PRIu64 ", rate %.4f/s, from %s on %s\n",
              c->flow_id, c->grains, c->bytes, c->gaps, c->reordered, c->size_mismatch, c->errors, conn_rate(c), c->peer, c->device);
    }
    fprintf(o, "total: %" PRIu64 " grains, %" PRIu64 " bytes, missing %" PRIu64 ", errors %" PRIu64 "\n", tg, tb, tgap, terr);
  }
  fflush(o);
}

static void usage_serve(FILE *o) {
  fprintf(o,
          "usage: %s serve --bind ADDR[:PORT] [--duration SECONDS] [--until-disconnect] [--json]\n"
          "\n"
          "  --bind ADDR[:PORT]   address to listen on (port defaults to " DEFAULT_PORT "); selects the device\n"
          "  --duration SECONDS   exit after this long (default: run until SIGINT/SIGTERM)\n"
          "  --until-disconnect   exit once every flow that connected has disconnected again\n"
          "  --json               machine-readable report on stdout at exit\n"
          "Prints \"listening on ...\" to stderr when ready.\n",
          g_prog);
}

int cmd_serve(int argc, char **argv) {
  const char *bind_to = NULL;
  int64_t duration_ns = 0;
  bool json = false, until_disconnect = false;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage_serve(stdout);
      return EXIT_OK;
    } else if (!strcmp(a, "--json")) {
      json = true;
    } else if (!strcmp(a, "--until-disconnect")) {
      until_disconnect = true;
    } else if (!strcmp(a, "--bind") || !strcmp(a, "--duration")) {
      if (!v) {
        errf("serve: %s needs a value", a);
        return EXIT_USAGE;
      }
      if (!strcmp(a, "--bind")) {
        bind_to = v;
      } else if (parse_duration(v, &duration_ns)) {
        errf("serve: --duration '%s' must be a positive number of seconds", v);
        return EXIT_USAGE;
      }
      i++;
    } else {
      errf("serve: unknown argument '%s' (see %s serve --help)", a, g_prog);
      return EXIT_USAGE;
    }
  }
  if (!bind_to) {
    errf("serve: --bind ADDR[:PORT] is required");
    return EXIT_USAGE;
  }
  struct sockaddr_storage sa;
  socklen_t salen;
  if (resolve_addr(bind_to, true, &sa, &salen, "--bind")) return EXIT_USAGE;

  install_signals();
  struct rdma_event_channel *ch = rdma_create_event_channel();
  if (!ch) {
    errf("serve: rdma_create_event_channel: %s (is rdma_ucm loaded and /dev/infiniband/rdma_cm "
         "accessible?)",
         strerror(errno));
    return EXIT_RUNTIME;
  }
  struct rdma_cm_id *listen_id = NULL;
  int rc = EXIT_RUNTIME;
  char abuf[80];
  if (set_nonblock(ch->fd)) {
    errf("serve: fcntl on the rdma_cm channel: %s", strerror(errno));
    goto out;
  }
  if (rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP)) {
    errf("serve: rdma_create_id: %s", strerror(errno));
    goto out;
  }
  if (rdma_bind_addr(listen_id, (struct sockaddr *)&sa)) {
    errf("serve: rdma_bind_addr %s: %s%s", addr_str((struct sockaddr *)&sa, abuf, sizeof abuf), strerror(errno),
         errno == EADDRNOTAVAIL || errno == ENODEV ? " (no RDMA device has that address?)" : "");
    goto out;
  }
  if (rdma_listen(listen_id, 16)) {
    errf("serve: rdma_listen: %s", strerror(errno));
    goto out;
  }
  fprintf(stderr, "%s: listening on %s (%s)\n", g_prog, addr_str(rdma_get_local_addr(listen_id), abuf, sizeof abuf),
          listen_id->verbs ? ibv_get_device_name(listen_id->verbs->device) : "any device");

  int64_t deadline = duration_ns ? now_ns() + duration_ns : 0;
  bool fatal = false;
  for (;;) {
    if (atomic_load(&g_stop) || fatal) break;
    if (deadline && now_ns() >= deadline) break;
    size_t active = 0, ever = 0;
    struct pollfd pfds[MAX_CONNS + 1];
    struct conn *owners[MAX_CONNS + 1];
    pfds[0].fd = ch->fd;
    pfds[0].events = POLLIN;
    owners[0] = NULL;
    size_t np = 1;
    for (size_t i = 0; i < g_nconns; i++) {
      struct conn *c = &g_conns[i];
      ever++;
      if (c->state == CONN_PENDING || c->state == CONN_UP) {
        active++;
        pfds[np].fd = c->cc->fd;
        pfds[np].events = POLLIN;
        owners[np++] = c;
      }
    }
    if (until_disconnect && ever > 0 && active == 0) break;
    int n = poll(pfds, np, 200);
    if (n < 0) {
      if (errno == EINTR) continue;
      errf("serve: poll: %s", strerror(errno));
      goto out;
    }
    for (size_t i = 1; i < np; i++)
      if (pfds[i].revents && owners[i]->state != CONN_CLOSED) conn_on_cq_event(owners[i]);
    if (pfds[0].revents)
      while (handle_cm_event(ch, listen_id, &fatal) > 0)
        ;
  }
  if (fatal) goto out;
  rc = g_serve_error ? EXIT_RUNTIME : EXIT_OK;
out:
  for (size_t i = 0; i < g_nconns; i++) {
    struct conn *c = &g_conns[i];
    if (c->state == CONN_PENDING || c->state == CONN_UP) {
      conn_poll(c, true);
      rdma_disconnect(c->id);
      conn_release(c);
      c->state = CONN_CLOSED;
    }
  }
  if (listen_id) rdma_destroy_id(listen_id);
  rdma_destroy_event_channel(ch);
  print_serve_report(json);
  return rc;
}
