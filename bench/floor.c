/*
 * The floor: the least work Linux allows to read a set of counter files once per sampling tick.
 *
 *   floor FILELIST SECONDS [INTERVAL_MS]
 *
 * FILELIST has one path a line (bench/lib/tick.mjs writes the files the exporter's sampler keeps
 * open). Two modes, each run back to back for SECONDS after a short warm-up:
 *
 *   pread:     every file opened once; each tick is one pread(fd, buf, 64, 0) per file plus
 *              strtoull() of the text (kernfs calls the attribute's show() on every read at
 *              offset 0, so this is what any reader must at least pay);
 *   openread:  each tick opens, reads and closes every file (what a reader that keeps no
 *              descriptors does, node_exporter's infiniband collector among them);
 *   pread_spaced: pread's ticks with SPACED_US of sleep between them, as a sampler ticks on an
 *              interval: the kernel's and the CPU's caches are no longer hot from the tick
 *              before, which costs the same reads about a third more on this VM.
 *
 * With INTERVAL_MS, only one mode runs, pread_interval: pread's ticks INTERVAL_MS apart, as the
 * daemon samples (1000 for its default 1 s). Every cache has gone cold by the next tick, and
 * each tick also pays for waking the process, as the daemon's ticks do.
 *
 * Prints one JSON object: per mode, ticks, median/p99 wall ns per tick and CPU ns per tick
 * (getrusage user + system).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static char **paths;
static int *fds;
static size_t nfiles;
static volatile uint64_t sink; /* keeps the parsed values alive */
static unsigned long errors;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
         ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
}

static uint64_t parse(const char *buf, ssize_t n) {
  if (n <= 0) {
    errors++;
    return 0;
  }
  return strtoull(buf, NULL, 10);
}

static void tick_pread(void) {
  char buf[64];
  uint64_t acc = 0;
  for (size_t i = 0; i < nfiles; i++) {
    ssize_t n = pread(fds[i], buf, sizeof buf - 1, 0);
    if (n >= 0) buf[n] = 0;
    acc += parse(buf, n);
  }
  sink += acc;
}

static void tick_openread(void) {
  char buf[64];
  uint64_t acc = 0;
  for (size_t i = 0; i < nfiles; i++) {
    int fd = open(paths[i], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      errors++;
      continue;
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n >= 0) buf[n] = 0;
    acc += parse(buf, n);
    close(fd);
  }
  sink += acc;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Sleep between spaced ticks (a sampler's interval is 1 s; 10 ms is enough to go cold). */
#define SPACED_US 10000

/* Runs `tick` for `seconds` after a warm-up, `spaced_us` apart (0: back to back). */
static void run(const char *name, void (*tick)(void), double seconds, uint64_t spaced_us, int last) {
  uint64_t warm_end = now_ns() + 300000000ull;
  while (now_ns() < warm_end) tick();
  size_t cap = 1 << 16, count = 0;
  uint64_t *wall = malloc(cap * sizeof *wall);
  uint64_t c0 = cpu_ns();
  uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
  uint64_t t = now_ns();
  while (t < end) {
    if (spaced_us) {
      struct timespec gap = {spaced_us / 1000000, (long)(spaced_us % 1000000) * 1000};
      nanosleep(&gap, NULL);
      t = now_ns();
    }
    tick();
    uint64_t t2 = now_ns();
    if (count == cap) wall = realloc(wall, (cap *= 2) * sizeof *wall);
    wall[count++] = t2 - t;
    t = t2;
  }
  uint64_t cpu = cpu_ns() - c0;
  qsort(wall, count, sizeof *wall, cmp_u64);
  printf("\"%s\":{\"ticks\":%zu,\"wallNsMedian\":%llu,\"wallNsP99\":%llu,\"cpuNsPerTick\":%.1f}%s", name, count,
         (unsigned long long)wall[count / 2], (unsigned long long)wall[(size_t)((count - 1) * 0.99)],
         (double)cpu / (double)count, last ? "" : ",");
  free(wall);
}

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: %s FILELIST SECONDS [INTERVAL_MS]\n", argv[0]);
    return 2;
  }
  double seconds = atof(argv[2]);
  FILE *list = fopen(argv[1], "r");
  if (!list) {
    perror(argv[1]);
    return 1;
  }
  size_t cap = 1024;
  paths = malloc(cap * sizeof *paths);
  char line[4096];
  while (fgets(line, sizeof line, list)) {
    line[strcspn(line, "\n")] = 0;
    if (!line[0]) continue;
    if (nfiles == cap) paths = realloc(paths, (cap *= 2) * sizeof *paths);
    paths[nfiles++] = strdup(line);
  }
  fclose(list);
  fds = malloc(nfiles * sizeof *fds);
  for (size_t i = 0; i < nfiles; i++) {
    fds[i] = open(paths[i], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fds[i] < 0) {
      fprintf(stderr, "%s: %s\n", paths[i], strerror(errno));
      return 1;
    }
  }
  printf("{\"files\":%zu,", nfiles);
  if (argc == 4) {
    run("pread_interval", tick_pread, seconds, (uint64_t)(atof(argv[3]) * 1000), 0);
  } else {
    run("pread", tick_pread, seconds, 0, 0);
    run("openread", tick_openread, seconds, 0, 0);
    run("pread_spaced", tick_pread, seconds, SPACED_US, 0);
  }
  printf("\"readErrors\":%lu}\n", errors);
  return 0;
}
