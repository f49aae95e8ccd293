/* Addresses and rdma_cm helpers shared by both roles. */
#ifndef MXL_LOADGEN_CM_H
#define MXL_LOADGEN_CM_H

#include "loadgen.h"

/* "host", "host:port", "[v6]", "[v6]:port"; the port defaults to DEFAULT_PORT. */
int resolve_addr(const char *spec, bool passive, struct sockaddr_storage *out, socklen_t *outlen, const char *opt);
const char *addr_str(const struct sockaddr *sa, char *buf, size_t len);
int mtu_bytes(enum ibv_mtu m);
/* Waits for the next event on a channel; on success *ev must be acked by the caller. */
int wait_cm_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want, struct rdma_cm_event **ev, const char *who,
                  const char *step);

/*
 * Frees what one connection holds, in the order the verbs need it (the QP before the CQ and PD it
 * uses, the id last), and clears each pointer; any of them may be NULL.
 */
void release_conn(struct rdma_cm_id **id, struct ibv_mr **mr, struct ibv_cq **cq, struct ibv_comp_channel **cc, struct ibv_pd **pd,
                  void **buf);

#endif
