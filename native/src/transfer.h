/*
 * What one event puts on the wire, as MXL fabrics does it (the exporter's src/model/transfer.ts,
 * from dmf-mxl/mxl lib/fabrics/ofi/src/internal/): a list of RDMA writes, each a scatter-gather
 * list of (offset, length) entries into the flow's source buffer, written back to back into the
 * receiver's region, immediate data on the last write. Pure: no verbs calls.
 */
#ifndef MXL_LOADGEN_TRANSFER_H
#define MXL_LOADGEN_TRANSFER_H

#include "loadgen.h"

#define MAX_PLAN_WRITES 64 /* discrete writes per grain (slice batches x planes) */
#define MAX_AUDIO_CHANNELS 128
#define MAX_ENTRIES (1 + 2 * MAX_AUDIO_CHANNELS)
#define MAX_IOV_LIMIT 32 /* rxe and ConnectX allow at least 30 send SGEs */

struct plan_write {
  uint64_t bytes;
  bool immediate;
};

/* MXL's audio batch: one header entry, then per channel one entry per ring fragment. */
struct audio_layout {
  uint32_t channels;
  uint32_t samples;      /* per channel per batch (maxSyncBatchSizeHint) */
  uint32_t sample_bytes; /* 4 = float32, 8 = float64 */
  uint32_t header_bytes; /* AudioEntryHeader: 16 */
  uint32_t iov_limit;    /* entries per write: libfabric verbs' tx iov limit, 4 */
  uint64_t ring;         /* samples per channel in the ring (bufferLength) */
};

struct plan {
  bool audio;
  struct audio_layout al;
  struct plan_write writes[MAX_PLAN_WRITES]; /* discrete: the writes of one grain */
  unsigned nwrites;
};

struct sg_entry {
  uint64_t offset; /* into the source buffer */
  uint64_t length;
};

struct event_write {
  unsigned first_entry, nentries;
  uint64_t bytes;
  uint64_t remote_offset;
  bool immediate;
};

struct event {
  struct sg_entry entries[MAX_ENTRIES];
  unsigned nentries;
  struct event_write writes[MAX_ENTRIES];
  unsigned nwrites;
  bool wrapped;
};

/* Bytes of one event's region: the receiver's buffer, the sum of the writes. */
uint64_t plan_event_bytes(const struct plan *p);
/* Bytes of the sender's source buffer (audio: header + every channel's ring). */
uint64_t plan_source_bytes(const struct plan *p);
/* Most writes and entries per write any event of the plan can have. */
unsigned plan_max_writes(const struct plan *p);
unsigned plan_max_entries(const struct plan *p);
/* Checks a plan; returns NULL or what is wrong. */
const char *plan_problem(const struct plan *p);
/* The writes of the event whose audio batch ends at `head` (ignored for discrete plans). */
void plan_event(const struct plan *p, uint64_t head, struct event *ev);
/* Packets of the event at a path MTU (0: unknown -> 0). */
uint64_t event_packets(const struct event *ev, int path_mtu);

#endif
