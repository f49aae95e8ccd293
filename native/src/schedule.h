/* Grain k's due time, computed from k alone; sleeping to an absolute time. */
#ifndef MXL_LOADGEN_SCHEDULE_H
#define MXL_LOADGEN_SCHEDULE_H

#include "loadgen.h"

int64_t due_offset_ns(uint64_t k, uint64_t num, uint64_t den);
uint64_t grains_in_duration(int64_t duration_ns, uint64_t num, uint64_t den);
/* Sleeps until t (CLOCK_MONOTONIC ns), waking every 200 ms to notice g_stop. */
void sleep_until(int64_t t);

#endif
