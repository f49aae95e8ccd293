/* Schedule maths: rounding never accumulates (native/README.md, "Pacing"). */
#include "schedule.h"

/* Offset of grain k from t0. Computed from k alone, so rounding never accumulates. */
int64_t due_offset_ns(uint64_t k, uint64_t num, uint64_t den) {
  unsigned __int128 t = (unsigned __int128)k * den * (unsigned __int128)NS_PER_S;
  t /= num;
  if (t > (unsigned __int128)INT64_MAX) return INT64_MAX;
  return (int64_t)t;
}

/* Number of grains k with due_offset_ns(k) < duration_ns: ceil(duration_ns * num / (den * 1e9)). */
uint64_t grains_in_duration(int64_t duration_ns, uint64_t num, uint64_t den) {
  unsigned __int128 a = (unsigned __int128)(uint64_t)duration_ns * num;
  unsigned __int128 b = (unsigned __int128)den * NS_PER_S;
  unsigned __int128 n = (a + b - 1) / b;
  return n > UINT64_MAX ? UINT64_MAX : (uint64_t)n;
}

void sleep_until(int64_t t) {
  for (;;) {
    if (atomic_load(&g_stop)) return;
    int64_t now = now_ns();
    if (now >= t) return;
    /* Wake at least every 200 ms to notice a signal; the target stays absolute. */
    int64_t wake = t - now > 200000000 ? now + 200000000 : t;
    struct timespec ts = {.tv_sec = wake / NS_PER_S, .tv_nsec = wake % NS_PER_S};
    int r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    if (r && r != EINTR) return;
  }
}
