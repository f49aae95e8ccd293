/*
 * A flow to send: its id, its rate (events per second as num/den) and its transfer plan, the
 * RDMA writes of one event (a grain, or an audio batch) as the exporter's model gives them
 * (`calc --output json`: `writes`, `audio`). Plus the sender's runtime state and results.
 */
#ifndef MXL_LOADGEN_FLOW_H
#define MXL_LOADGEN_FLOW_H

#include "loadgen.h"
#include "transfer.h"

struct flow {
  char id[FLOW_ID_MAX + 1];
  uint64_t num, den;
  struct plan plan;

  /* sender runtime */
  struct rdma_event_channel *ch;
  struct rdma_cm_id *cm;
  struct ibv_pd *pd;
  struct ibv_comp_channel *cc;
  struct ibv_cq *cq;
  struct ibv_mr *mr;
  void *buf;
  uint64_t raddr;
  uint32_t rkey;
  int path_mtu; /* bytes, 0 if unknown */
  char device[64];
  unsigned index;
  unsigned depth;
  int64_t t0;
  int64_t duration_ns;
  unsigned outstanding; /* writes */
  bool pace_only;
  bool head_given; /* --audio-head: the first batch's end index */
  uint64_t head;   /* audio: the next batch's end index (MXL's headIndex) */

  /* sender results */
  uint64_t expected;
  uint64_t posted;
  uint64_t completed;
  uint64_t writes_sent;
  uint64_t packets_sent; /* sum of ceil(write / path MTU) over the writes sent */
  uint64_t wraps;
  uint64_t late;
  int64_t max_late_ns;
  long double sum_late_ns;
  int64_t first_post_ns, last_post_ns;
  bool failed;
  char errmsg[512];
};

/* Command-line and JSON flow definitions (flowspec.c, flows_json.c). */
int parse_rate(const char *s, uint64_t *num, uint64_t *den);
int parse_duration(const char *s, int64_t *out);
int set_flow_id(struct flow *f, const char *id, const char *where);
int check_flow(struct flow *f, const char *where);
int parse_flow_spec(const char *spec, struct flow *f);
int read_flows_json(const char *file, struct flow *flows, size_t *nflows);

#endif
