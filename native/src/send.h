/* The sending role (send.c: RDMA; send_cmd.c: arguments and reports). */
#ifndef MXL_LOADGEN_SEND_H
#define MXL_LOADGEN_SEND_H

#include "flow.h"

int sender_setup(struct flow *f, const struct sockaddr *src, const struct sockaddr *dst);
void sender_teardown(struct flow *f, bool disconnect);
void *sender_thread(void *arg);

#endif
