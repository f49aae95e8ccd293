/* The rdma_cm private data both roles exchange when a flow connects. */
#ifndef MXL_LOADGEN_WIRE_H
#define MXL_LOADGEN_WIRE_H

#include "loadgen.h"

#define WIRE_MAGIC 0x4d584c47u /* "MXLG" */
/* 2: write_bytes is the target region per event (all writes of a grain or batch together). */
#define WIRE_VERSION 2

/* Connect request private data: RDMA_PS_TCP leaves 56 bytes for the consumer. */
struct wire_req {
  uint32_t magic;
  uint16_t version;
  uint16_t flow_index;
  uint64_t write_bytes;
  char flow_id[WIRE_ID_LEN]; /* truncated, not NUL-terminated when 40 long */
} __attribute__((packed));

/* Accept/reject private data (up to 196 bytes allowed on accept, 148 on reject). */
struct wire_rep {
  uint32_t magic;
  uint32_t status; /* 0 = ok, else an errno value from the receiver */
  uint64_t addr;
  uint32_t rkey;
  uint32_t reserved;
} __attribute__((packed));

_Static_assert(sizeof(struct wire_req) == 56, "wire_req must fit RDMA_PS_TCP private data");

#endif
