/*
 * mxl-loadgen: shared declarations (constants, the process-wide stop flag, messages, clocks,
 * number parsing and JSON output). One concern per file: see native/README.md, "Source layout".
 */
#ifndef MXL_LOADGEN_H
#define MXL_LOADGEN_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define LOADGEN_VERSION "0.1.0"
#define DEFAULT_PORT "7472"
#define MAX_FLOWS 64
#define MAX_CONNS 1024
#define FLOW_ID_MAX 255
#define WIRE_ID_LEN 40
#define MAX_WRITE_BYTES (1ull << 31) /* RC max_msg_sz on most devices, rxe included */
#define RECV_DEPTH 64
#define DEFAULT_SEND_DEPTH 8
#define CM_TIMEOUT_MS 30000 /* TCG guests are slow; rdma_cm itself retries inside this */
#define DRAIN_TIMEOUT_NS (30ll * 1000000000ll)
#define NS_PER_S 1000000000ll

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

extern atomic_int g_stop;
extern const char *g_prog;

void install_signals(void);
void errf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int64_t now_ns(void);
/* Decimal digits only, no sign, no spaces; fits uint64. */
int parse_u64(const char *s, uint64_t *out);
int set_nonblock(int fd);
/* A JSON string literal of s. */
void json_str(FILE *out, const char *s);

#endif
