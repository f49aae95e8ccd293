/* The writes of one event; see transfer.h. */
#include "transfer.h"

uint64_t plan_event_bytes(const struct plan *p) {
  if (p->audio) return p->al.header_bytes + (uint64_t)p->al.channels * p->al.samples * p->al.sample_bytes;
  uint64_t sum = 0;
  for (unsigned i = 0; i < p->nwrites; i++) sum += p->writes[i].bytes;
  return sum;
}

/* The ring starts on its own page after the header entry. */
static uint64_t ring_offset(const struct audio_layout *al) { return al->header_bytes ? 4096 : 0; }

uint64_t plan_source_bytes(const struct plan *p) {
  if (!p->audio) return plan_event_bytes(p);
  return ring_offset(&p->al) + (uint64_t)p->al.channels * p->al.ring * p->al.sample_bytes;
}

static unsigned audio_max_entries(const struct audio_layout *al) { return (al->header_bytes ? 1 : 0) + 2 * al->channels; }

unsigned plan_max_writes(const struct plan *p) {
  if (!p->audio) return p->nwrites;
  unsigned n = audio_max_entries(&p->al);
  return p->al.iov_limit ? (n + p->al.iov_limit - 1) / p->al.iov_limit : 1;
}

unsigned plan_max_entries(const struct plan *p) {
  if (!p->audio) return 1;
  unsigned n = audio_max_entries(&p->al);
  return p->al.iov_limit && p->al.iov_limit < n ? p->al.iov_limit : n;
}

const char *plan_problem(const struct plan *p) {
  if (p->audio) {
    const struct audio_layout *al = &p->al;
    if (al->channels < 1 || al->channels > MAX_AUDIO_CHANNELS) return "audio.channels must be 1..128";
    if (al->sample_bytes != 4 && al->sample_bytes != 8) return "audio.sampleBytes must be 4 or 8";
    if (al->samples < 1 || (uint64_t)al->samples * 2 > al->ring)
      return "audio.samplesPerBatch must be 1..ringLengthSamples/2 (MXL refuses larger batches)";
    if (al->ring > (1ull << 26)) return "audio.ringLengthSamples is too large";
    if (al->header_bytes > 4096) return "audio.headerBytes must be 0..4096";
    if (al->iov_limit > MAX_IOV_LIMIT) return "audio.txIovLimit must be 0..32";
    if (plan_source_bytes(p) > MAX_WRITE_BYTES) return "the audio ring is larger than 2 GiB";
    return NULL;
  }
  if (p->nwrites == 0) return "no writes";
  for (unsigned i = 0; i < p->nwrites; i++)
    if (p->writes[i].bytes == 0 || p->writes[i].bytes > MAX_WRITE_BYTES) return "each write must be 1..2^31 bytes";
  if (plan_event_bytes(p) > MAX_WRITE_BYTES) return "the writes of one grain add up to more than 2^31 bytes";
  return NULL;
}

static void add_entry(struct event *ev, uint64_t offset, uint64_t length) {
  ev->entries[ev->nentries++] = (struct sg_entry){.offset = offset, .length = length};
}

/*
 * MXL: AudioBounceBuffer::getMutableMultiBufferSlices (start = (head + L - count) % L, a second
 * fragment when the batch runs past the ring's end), ProtocolEgressRMA.cpp:194-260 (header entry
 * first, then all fragments of one channel before the next), Endpoint.cpp:356-392 (writes of at
 * most iov_limit entries, back to back in the remote region, immediate on the last).
 */
static void audio_event(const struct audio_layout *al, uint64_t head, struct event *ev) {
  uint64_t L = al->ring, count = al->samples, sb = al->sample_bytes;
  uint64_t start = (head + L - count % L) % L, end = head % L;
  uint64_t first = start < end ? count : L - start;
  uint64_t base = ring_offset(al);
  if (al->header_bytes) add_entry(ev, 0, al->header_bytes);
  for (uint64_t c = 0; c < al->channels; c++) {
    uint64_t chan = base + c * L * sb;
    add_entry(ev, chan + start * sb, first * sb);
    if (count > first) add_entry(ev, chan, (count - first) * sb);
  }
  ev->wrapped = count > first;
  unsigned limit = al->iov_limit ? al->iov_limit : ev->nentries;
  uint64_t remote = 0;
  for (unsigned e = 0; e < ev->nentries; e += limit) {
    struct event_write *w = &ev->writes[ev->nwrites++];
    w->first_entry = e;
    w->nentries = ev->nentries - e < limit ? ev->nentries - e : limit;
    w->bytes = 0;
    for (unsigned i = 0; i < w->nentries; i++) w->bytes += ev->entries[e + i].length;
    w->remote_offset = remote;
    w->immediate = e + limit >= ev->nentries;
    remote += w->bytes;
  }
}

void plan_event(const struct plan *p, uint64_t head, struct event *ev) {
  ev->nentries = 0;
  ev->nwrites = 0;
  ev->wrapped = false;
  if (p->audio) {
    audio_event(&p->al, head, ev);
    return;
  }
  uint64_t offset = 0;
  for (unsigned i = 0; i < p->nwrites; i++) {
    add_entry(ev, offset, p->writes[i].bytes);
    ev->writes[ev->nwrites++] = (struct event_write){
        .first_entry = i,
        .nentries = 1,
        .bytes = p->writes[i].bytes,
        .remote_offset = offset,
        .immediate = p->writes[i].immediate,
    };
    offset += p->writes[i].bytes;
  }
}

uint64_t event_packets(const struct event *ev, int path_mtu) {
  if (path_mtu <= 0) return 0;
  uint64_t n = 0;
  for (unsigned i = 0; i < ev->nwrites; i++)
    n += ev->writes[i].bytes ? (ev->writes[i].bytes + (uint64_t)path_mtu - 1) / (uint64_t)path_mtu : 1;
  return n;
}
