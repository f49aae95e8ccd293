/*
 * mxl-loadgen: an MXL-shaped RDMA load generator.
 *
 * MXL fabrics (verbs provider, RC over rdma_cm) moves one grain with one RDMA WRITE WITH IMM.
 * This program reproduces that traffic shape without any media knowledge: each flow is a
 * (bytes per write, writes per second as num/den) pair, normally computed by the exporter's model.
 *
 *   serve: accepts one RC connection per flow, registers a target buffer per flow and counts the
 *          write-with-immediate completions it receives.
 *   send:  one connection (one QP) per flow, one thread per flow, grain k posted at
 *          t0 + floor(k * den * 1e9 / num) ns on CLOCK_MONOTONIC.
 *
 * Immediate data: the low 32 bits of the grain index. Flows are told apart by their QP, not by
 * the immediate, exactly as MXL keeps one endpoint per flow.
 */
#define _GNU_SOURCE
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

#define WIRE_MAGIC 0x4d584c47u /* "MXLG" */
#define WIRE_VERSION 1

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

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

static atomic_int g_stop;
static const char *g_prog = "mxl-loadgen";

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&g_stop, 1);
}

static void install_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static void errf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void errf(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", g_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* ---------------------------------------------------------------- schedule maths */

/* Offset of grain k from t0. Computed from k alone, so rounding never accumulates. */
static int64_t due_offset_ns(uint64_t k, uint64_t num, uint64_t den)
{
	unsigned __int128 t = (unsigned __int128)k * den * (unsigned __int128)NS_PER_S;
	t /= num;
	if (t > (unsigned __int128)INT64_MAX)
		return INT64_MAX;
	return (int64_t)t;
}

/* Number of grains k with due_offset_ns(k) < duration_ns: ceil(duration_ns * num / (den * 1e9)). */
static uint64_t grains_in_duration(int64_t duration_ns, uint64_t num, uint64_t den)
{
	unsigned __int128 a = (unsigned __int128)(uint64_t)duration_ns * num;
	unsigned __int128 b = (unsigned __int128)den * NS_PER_S;
	unsigned __int128 n = (a + b - 1) / b;
	return n > UINT64_MAX ? UINT64_MAX : (uint64_t)n;
}

/* ---------------------------------------------------------------- argument parsing */

struct flow {
	char id[FLOW_ID_MAX + 1];
	uint64_t bytes;
	uint64_t num, den;

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
	unsigned outstanding;
	bool pace_only;

	/* sender results */
	uint64_t expected;
	uint64_t posted;
	uint64_t completed;
	uint64_t late;
	int64_t max_late_ns;
	long double sum_late_ns;
	int64_t first_post_ns, last_post_ns;
	bool failed;
	char errmsg[512];
};

static int parse_u64(const char *s, uint64_t *out)
{
	if (!s || !*s || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

static int parse_rate(const char *s, uint64_t *num, uint64_t *den)
{
	char tmp[64];
	if (strlen(s) >= sizeof tmp)
		return -1;
	strcpy(tmp, s);
	char *slash = strchr(tmp, '/');
	if (slash) {
		*slash = '\0';
		if (parse_u64(tmp, num) || parse_u64(slash + 1, den))
			return -1;
	} else {
		if (parse_u64(tmp, num))
			return -1;
		*den = 1;
	}
	/* Bounds keep k * den * 1e9 far inside 128 bits and periods >= 1 ns. */
	if (*num == 0 || *den == 0 || *num > 1000000000ull || *den > 1000000000ull)
		return -1;
	if (*den * (uint64_t)NS_PER_S / *num == 0)
		return -1;
	return 0;
}

/* Decimal seconds ("10", "2.5", "0.001") into integer nanoseconds without floating point. */
static int parse_duration(const char *s, int64_t *out)
{
	if (!s || !*s)
		return -1;
	int64_t whole = 0, frac = 0;
	int frac_digits = 0;
	const char *p = s;
	if (!isdigit((unsigned char)*p) && *p != '.')
		return -1;
	for (; isdigit((unsigned char)*p); p++) {
		whole = whole * 10 + (*p - '0');
		if (whole > 100000000) /* ~3 years */
			return -1;
	}
	if (*p == '.') {
		p++;
		for (; isdigit((unsigned char)*p); p++) {
			if (frac_digits < 9) {
				frac = frac * 10 + (*p - '0');
				frac_digits++;
			}
		}
	}
	if (*p)
		return -1;
	while (frac_digits < 9) {
		frac *= 10;
		frac_digits++;
	}
	*out = whole * NS_PER_S + frac;
	return *out > 0 ? 0 : -1;
}

static int set_flow_id(struct flow *f, const char *id, const char *where)
{
	size_t len = strlen(id);
	if (len == 0 || len > FLOW_ID_MAX) {
		errf("%s: flow id must be 1..%d characters", where, FLOW_ID_MAX);
		return -1;
	}
	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)id[i] < 0x20) {
			errf("%s: flow id contains a control character", where);
			return -1;
		}
	}
	memcpy(f->id, id, len + 1);
	return 0;
}

static int check_flow(const struct flow *f, const char *where)
{
	if (f->bytes == 0 || f->bytes > MAX_WRITE_BYTES) {
		errf("%s: bytes must be 1..%llu", where, (unsigned long long)MAX_WRITE_BYTES);
		return -1;
	}
	return 0;
}

/* id=<id>,bytes=<n>,rate=<num>/<den>; the id may not contain ',' (use --flows-json for that). */
static int parse_flow_spec(const char *spec, struct flow *f)
{
	char *copy = strdup(spec);
	if (!copy) {
		errf("out of memory");
		return -1;
	}
	bool have_id = false, have_bytes = false, have_rate = false;
	int rc = -1;
	char *save = NULL;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		if (!eq) {
			errf("--flow '%s': expected key=value, got '%s'", spec, tok);
			goto out;
		}
		*eq = '\0';
		const char *val = eq + 1;
		if (!strcmp(tok, "id")) {
			if (set_flow_id(f, val, "--flow"))
				goto out;
			have_id = true;
		} else if (!strcmp(tok, "bytes")) {
			if (parse_u64(val, &f->bytes)) {
				errf("--flow '%s': bytes '%s' is not a non-negative integer", spec, val);
				goto out;
			}
			have_bytes = true;
		} else if (!strcmp(tok, "rate")) {
			if (parse_rate(val, &f->num, &f->den)) {
				errf("--flow '%s': rate '%s' is not num/den with 1 <= num,den <= 1e9 and "
				     "a period >= 1 ns",
				     spec, val);
				goto out;
			}
			have_rate = true;
		} else {
			errf("--flow '%s': unknown key '%s' (expected id, bytes, rate)", spec, tok);
			goto out;
		}
	}
	if (!have_id || !have_bytes || !have_rate) {
		errf("--flow '%s': missing %s", spec, !have_id ? "id" : !have_bytes ? "bytes" : "rate");
		goto out;
	}
	if (check_flow(f, "--flow"))
		goto out;
	rc = 0;
out:
	free(copy);
	return rc;
}

/* ---------------------------------------------------------------- tiny JSON reader for --flows-json */

struct jp {
	const char *p, *end, *start;
	const char *file;
};

static void jp_ws(struct jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static int jp_line(const struct jp *j)
{
	int line = 1;
	for (const char *q = j->start; q < j->p; q++)
		line += *q == '\n';
	return line;
}

static int jp_err(const struct jp *j, const char *what)
{
	errf("--flows-json %s: line %d: %s", j->file, jp_line(j), what);
	return -1;
}

static int jp_hex4(struct jp *j, unsigned *out)
{
	if (j->end - j->p < 4)
		return -1;
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		char c = j->p[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	j->p += 4;
	*out = v;
	return 0;
}

/* Reads a string into out (UTF-8); out may be NULL to skip. */
static int jp_string(struct jp *j, char *out, size_t cap)
{
	size_t n = 0;
	if (j->p >= j->end || *j->p != '"')
		return jp_err(j, "expected a string");
	j->p++;
	for (;;) {
		if (j->p >= j->end)
			return jp_err(j, "unterminated string");
		unsigned char c = (unsigned char)*j->p++;
		unsigned cp;
		if (c == '"')
			break;
		if (c < 0x20)
			return jp_err(j, "control character in string");
		if (c != '\\') {
			if (out && n + 1 < cap)
				out[n++] = (char)c;
			else if (out)
				return jp_err(j, "string too long");
			continue;
		}
		if (j->p >= j->end)
			return jp_err(j, "unterminated string");
		c = (unsigned char)*j->p++;
		switch (c) {
		case '"': cp = '"'; break;
		case '\\': cp = '\\'; break;
		case '/': cp = '/'; break;
		case 'b': cp = '\b'; break;
		case 'f': cp = '\f'; break;
		case 'n': cp = '\n'; break;
		case 'r': cp = '\r'; break;
		case 't': cp = '\t'; break;
		case 'u':
			if (jp_hex4(j, &cp))
				return jp_err(j, "bad \\u escape");
			if (cp >= 0xd800 && cp < 0xdc00) {
				unsigned lo;
				if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u')
					return jp_err(j, "unpaired surrogate");
				j->p += 2;
				if (jp_hex4(j, &lo) || lo < 0xdc00 || lo > 0xdfff)
					return jp_err(j, "unpaired surrogate");
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			}
			break;
		default:
			return jp_err(j, "bad escape in string");
		}
		if (!out)
			continue;
		char enc[4];
		size_t len;
		if (cp < 0x80) {
			enc[0] = (char)cp;
			len = 1;
		} else if (cp < 0x800) {
			enc[0] = (char)(0xc0 | (cp >> 6));
			enc[1] = (char)(0x80 | (cp & 0x3f));
			len = 2;
		} else if (cp < 0x10000) {
			enc[0] = (char)(0xe0 | (cp >> 12));
			enc[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
			enc[2] = (char)(0x80 | (cp & 0x3f));
			len = 3;
		} else {
			enc[0] = (char)(0xf0 | (cp >> 18));
			enc[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
			enc[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
			enc[3] = (char)(0x80 | (cp & 0x3f));
			len = 4;
		}
		if (n + len >= cap)
			return jp_err(j, "string too long");
		memcpy(out + n, enc, len);
		n += len;
	}
	if (out)
		out[n] = '\0';
	return 0;
}

/* A JSON number token as text (validated loosely; callers check what they need). */
static int jp_number_text(struct jp *j, char *out, size_t cap)
{
	size_t n = 0;
	while (j->p < j->end && (isdigit((unsigned char)*j->p) || strchr("+-.eE", *j->p))) {
		if (n + 1 >= cap)
			return jp_err(j, "number too long");
		out[n++] = *j->p++;
	}
	out[n] = '\0';
	return n ? 0 : jp_err(j, "expected a value");
}

static int jp_skip_value(struct jp *j, int depth)
{
	if (depth > 64)
		return jp_err(j, "nesting too deep");
	jp_ws(j);
	if (j->p >= j->end)
		return jp_err(j, "unexpected end of file");
	char c = *j->p;
	if (c == '"')
		return jp_string(j, NULL, 0);
	if (c == '{' || c == '[') {
		char close = c == '{' ? '}' : ']';
		j->p++;
		jp_ws(j);
		if (j->p < j->end && *j->p == close) {
			j->p++;
			return 0;
		}
		for (;;) {
			if (c == '{') {
				jp_ws(j);
				if (jp_string(j, NULL, 0))
					return -1;
				jp_ws(j);
				if (j->p >= j->end || *j->p != ':')
					return jp_err(j, "expected ':'");
				j->p++;
			}
			if (jp_skip_value(j, depth + 1))
				return -1;
			jp_ws(j);
			if (j->p < j->end && *j->p == ',') {
				j->p++;
				continue;
			}
			if (j->p < j->end && *j->p == close) {
				j->p++;
				return 0;
			}
			return jp_err(j, "expected ',' or closing bracket");
		}
	}
	static const char *const lits[] = { "true", "false", "null" };
	for (size_t i = 0; i < 3; i++) {
		size_t l = strlen(lits[i]);
		if ((size_t)(j->end - j->p) >= l && !memcmp(j->p, lits[i], l)) {
			j->p += l;
			return 0;
		}
	}
	char num[64];
	return jp_number_text(j, num, sizeof num);
}

static int jp_flow(struct jp *j, struct flow *f, size_t index)
{
	bool have_id = false, have_bytes = false, have_rate = false;
	char key[64];
	char where[96];
	snprintf(where, sizeof where, "--flows-json %s: entry %zu", j->file, index);

	jp_ws(j);
	if (j->p >= j->end || *j->p != '{')
		return jp_err(j, "expected an object for each flow");
	j->p++;
	jp_ws(j);
	if (j->p < j->end && *j->p == '}') {
		j->p++;
		goto done;
	}
	for (;;) {
		jp_ws(j);
		const char *key_at = j->p;
		if (j->p < j->end && *j->p == '"') {
			/* keys longer than any we know are skipped as unknown */
			struct jp probe = *j;
			if (jp_string(&probe, key, sizeof key)) {
				j->p = key_at;
				if (jp_string(j, NULL, 0))
					return -1;
				key[0] = '\0';
			} else {
				*j = probe;
			}
		} else {
			return jp_err(j, "expected a key");
		}
		jp_ws(j);
		if (j->p >= j->end || *j->p != ':')
			return jp_err(j, "expected ':'");
		j->p++;
		jp_ws(j);
		if (!strcmp(key, "flowId")) {
			char id[FLOW_ID_MAX * 4 + 1];
			if (jp_string(j, id, sizeof id))
				return -1;
			if (set_flow_id(f, id, where))
				return -1;
			have_id = true;
		} else if (!strcmp(key, "writeBytes") || !strcmp(key, "writeBytesPerEvent")) {
			char num[64];
			if (j->p < j->end && *j->p == '"')
				return jp_err(j, "writeBytes must be a number");
			if (jp_number_text(j, num, sizeof num))
				return -1;
			if (parse_u64(num, &f->bytes))
				return jp_err(j, "writeBytes must be a non-negative integer");
			have_bytes = true;
		} else if (!strcmp(key, "rate") || !strcmp(key, "eventRate")) {
			char rate[64];
			if (j->p < j->end && *j->p == '"') {
				if (jp_string(j, rate, sizeof rate))
					return -1;
			} else if (jp_number_text(j, rate, sizeof rate)) {
				return -1;
			}
			if (parse_rate(rate, &f->num, &f->den))
				return jp_err(j, "rate must be \"num/den\" (or an integer) with 1 <= num,den <= 1e9");
			have_rate = true;
		} else if (jp_skip_value(j, 1)) {
			return -1;
		}
		jp_ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == '}') {
			j->p++;
			break;
		}
		return jp_err(j, "expected ',' or '}'");
	}
done:
	if (!have_id || !have_bytes || !have_rate) {
		errf("%s: missing \"%s\"", where,
		     !have_id ? "flowId" : !have_bytes ? "writeBytes" : "rate");
		return -1;
	}
	return check_flow(f, where);
}

static int read_flows_json(const char *file, struct flow *flows, size_t *nflows)
{
	FILE *fp = strcmp(file, "-") ? fopen(file, "rb") : stdin;
	if (!fp) {
		errf("--flows-json %s: open: %s", file, strerror(errno));
		return -1;
	}
	size_t cap = 1 << 16, len = 0;
	char *data = malloc(cap);
	if (!data) {
		errf("out of memory");
		return -1;
	}
	for (;;) {
		if (len == cap) {
			if (cap >= (64u << 20)) {
				errf("--flows-json %s: file larger than 64 MiB", file);
				goto fail;
			}
			cap *= 2;
			char *bigger = realloc(data, cap);
			if (!bigger) {
				errf("out of memory");
				goto fail;
			}
			data = bigger;
		}
		size_t got = fread(data + len, 1, cap - len, fp);
		len += got;
		if (got == 0) {
			if (ferror(fp)) {
				errf("--flows-json %s: read: %s", file, strerror(errno));
				goto fail;
			}
			break;
		}
	}
	if (fp != stdin)
		fclose(fp);
	fp = NULL;

	struct jp j = { .p = data, .end = data + len, .start = data, .file = file };
	if (len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3))
		j.p += 3;
	jp_ws(&j);
	if (j.p >= j.end || *j.p != '[') {
		jp_err(&j, "expected a JSON array of {\"flowId\", \"writeBytes\", \"rate\"} objects");
		goto fail;
	}
	j.p++;
	jp_ws(&j);
	if (j.p < j.end && *j.p == ']') {
		j.p++;
	} else {
		for (size_t idx = 0;; idx++) {
			if (*nflows >= MAX_FLOWS) {
				errf("--flows-json %s: more than %d flows in total", file, MAX_FLOWS);
				goto fail;
			}
			struct flow *f = &flows[*nflows];
			memset(f, 0, sizeof *f);
			if (jp_flow(&j, f, idx))
				goto fail;
			(*nflows)++;
			jp_ws(&j);
			if (j.p < j.end && *j.p == ',') {
				j.p++;
				continue;
			}
			if (j.p < j.end && *j.p == ']') {
				j.p++;
				break;
			}
			jp_err(&j, "expected ',' or ']'");
			goto fail;
		}
	}
	jp_ws(&j);
	if (j.p != j.end) {
		jp_err(&j, "trailing data after the array");
		goto fail;
	}
	free(data);
	return 0;
fail:
	if (fp && fp != stdin)
		fclose(fp);
	free(data);
	return -1;
}

/* ---------------------------------------------------------------- addresses */

/* "host", "host:port", "[v6]", "[v6]:port"; a bare IPv6 literal (several colons) has no port. */
static int resolve_addr(const char *spec, bool passive, struct sockaddr_storage *out, socklen_t *outlen,
			const char *opt)
{
	char host[256], port[16];
	const char *colon = strrchr(spec, ':');
	snprintf(port, sizeof port, "%s", DEFAULT_PORT);
	if (spec[0] == '[') {
		const char *close = strchr(spec, ']');
		if (!close || (size_t)(close - spec - 1) >= sizeof host) {
			errf("%s '%s': bad bracketed address", opt, spec);
			return -1;
		}
		memcpy(host, spec + 1, (size_t)(close - spec - 1));
		host[close - spec - 1] = '\0';
		if (close[1] == ':')
			snprintf(port, sizeof port, "%s", close + 2);
		else if (close[1]) {
			errf("%s '%s': bad bracketed address", opt, spec);
			return -1;
		}
	} else if (colon && strchr(spec, ':') == colon) {
		if ((size_t)(colon - spec) >= sizeof host) {
			errf("%s '%s': host too long", opt, spec);
			return -1;
		}
		memcpy(host, spec, (size_t)(colon - spec));
		host[colon - spec] = '\0';
		snprintf(port, sizeof port, "%s", colon + 1);
	} else {
		if (strlen(spec) >= sizeof host) {
			errf("%s '%s': host too long", opt, spec);
			return -1;
		}
		strcpy(host, spec);
	}
	uint64_t pnum;
	if (parse_u64(port, &pnum) || pnum > 65535) {
		errf("%s '%s': port must be 0..65535", opt, spec);
		return -1;
	}
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
	int rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (rc) {
		errf("%s '%s': cannot resolve '%s': %s", opt, spec, host, gai_strerror(rc));
		return -1;
	}
	memcpy(out, res->ai_addr, res->ai_addrlen);
	*outlen = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static const char *addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
		snprintf(buf, len, "%s:%u", host, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
		snprintf(buf, len, "[%s]:%u", host, ntohs(in6->sin6_port));
	} else {
		snprintf(buf, len, "(family %d)", sa->sa_family);
	}
	return buf;
}

/* ---------------------------------------------------------------- JSON output helpers */

static void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

static int mtu_bytes(enum ibv_mtu m)
{
	switch (m) {
	case IBV_MTU_256: return 256;
	case IBV_MTU_512: return 512;
	case IBV_MTU_1024: return 1024;
	case IBV_MTU_2048: return 2048;
	case IBV_MTU_4096: return 4096;
	}
	return 0;
}

/* ---------------------------------------------------------------- rdma_cm helpers */

/*
 * Waits for the next event on a (per-flow) channel. On success *ev must be acked by the caller.
 * Returns -1 with a message on timeout, error, or an event other than `want`.
 */
static int wait_cm_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
			 struct rdma_cm_event **ev, const char *who, const char *step)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	int64_t deadline = now_ns() + (int64_t)CM_TIMEOUT_MS * 1000000;
	for (;;) {
		int64_t left = deadline - now_ns();
		if (left <= 0) {
			errf("%s: %s: no rdma_cm event within %d ms", who, step, CM_TIMEOUT_MS);
			return -1;
		}
		if (atomic_load(&g_stop)) {
			errf("%s: %s: interrupted", who, step);
			return -1;
		}
		int n = poll(&pfd, 1, left > 200000000 ? 200 : (int)(left / 1000000) + 1);
		if (n < 0 && errno != EINTR) {
			errf("%s: %s: poll: %s", who, step, strerror(errno));
			return -1;
		}
		if (n > 0)
			break;
	}
	if (rdma_get_cm_event(ch, ev)) {
		errf("%s: %s: rdma_get_cm_event: %s", who, step, strerror(errno));
		return -1;
	}
	if ((*ev)->event == want && (*ev)->status == 0)
		return 0;

	const struct rdma_cm_event *e = *ev;
	if (e->event == RDMA_CM_EVENT_REJECTED) {
		const struct wire_rep *rep = e->param.conn.private_data;
		if (rep && e->param.conn.private_data_len >= sizeof *rep && be32toh(rep->magic) == WIRE_MAGIC &&
		    rep->status)
			errf("%s: %s: receiver rejected the flow: %s", who, step,
			     strerror((int)be32toh(rep->status)));
		else if (e->status == 8) /* IB CM reject reason 8: invalid service ID */
			errf("%s: %s: connection rejected: nothing listens on that address and port "
			     "(CM reject reason 8)",
			     who, step);
		else
			errf("%s: %s: connection rejected (CM reject reason %d)", who, step, e->status);
	} else {
		errf("%s: %s: got %s (status %d: %s) instead of %s", who, step, rdma_event_str(e->event),
		     e->status, e->status < 0 ? strerror(-e->status) : "see rdma_cm(7)", rdma_event_str(want));
	}
	rdma_ack_cm_event(*ev);
	*ev = NULL;
	return -1;
}

/* ---------------------------------------------------------------- send role */

static void flow_fail(struct flow *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void flow_fail(struct flow *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->errmsg, sizeof f->errmsg, fmt, ap);
	va_end(ap);
	f->failed = true;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int sender_setup(struct flow *f, const struct sockaddr *src, const struct sockaddr *dst)
{
	struct rdma_cm_event *ev = NULL;
	char who[FLOW_ID_MAX + 16];
	snprintf(who, sizeof who, "flow %.*s", FLOW_ID_MAX, f->id);

	f->ch = rdma_create_event_channel();
	if (!f->ch) {
		errf("%s: rdma_create_event_channel: %s (is rdma_ucm loaded and /dev/infiniband/rdma_cm "
		     "accessible?)",
		     who, strerror(errno));
		return -1;
	}
	if (rdma_create_id(f->ch, &f->cm, f, RDMA_PS_TCP)) {
		errf("%s: rdma_create_id: %s", who, strerror(errno));
		return -1;
	}
	if (rdma_resolve_addr(f->cm, (struct sockaddr *)src, (struct sockaddr *)dst, 5000)) {
		errf("%s: rdma_resolve_addr: %s", who, strerror(errno));
		return -1;
	}
	if (wait_cm_event(f->ch, RDMA_CM_EVENT_ADDR_RESOLVED, &ev, who, "address resolution"))
		return -1;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(f->cm, 5000)) {
		errf("%s: rdma_resolve_route: %s", who, strerror(errno));
		return -1;
	}
	if (wait_cm_event(f->ch, RDMA_CM_EVENT_ROUTE_RESOLVED, &ev, who, "route resolution"))
		return -1;
	rdma_ack_cm_event(ev);

	snprintf(f->device, sizeof f->device, "%s", ibv_get_device_name(f->cm->verbs->device));
	f->pd = ibv_alloc_pd(f->cm->verbs);
	if (!f->pd) {
		errf("%s: ibv_alloc_pd on %s: %s", who, f->device, strerror(errno));
		return -1;
	}
	f->cc = ibv_create_comp_channel(f->cm->verbs);
	if (!f->cc || set_nonblock(f->cc->fd)) {
		errf("%s: ibv_create_comp_channel: %s", who, strerror(errno));
		return -1;
	}
	f->cq = ibv_create_cq(f->cm->verbs, (int)f->depth + 1, f, f->cc, 0);
	if (!f->cq) {
		errf("%s: ibv_create_cq (%u entries): %s", who, f->depth + 1, strerror(errno));
		return -1;
	}
	if (posix_memalign(&f->buf, 4096, f->bytes)) {
		errf("%s: cannot allocate a %" PRIu64 "-byte source buffer", who, f->bytes);
		return -1;
	}
	/* Nonzero pattern so a receiver dump shows which flow wrote it. */
	memset(f->buf, 0xa0 + (int)(f->index & 0x0f), f->bytes);
	f->mr = ibv_reg_mr(f->pd, f->buf, f->bytes, IBV_ACCESS_LOCAL_WRITE);
	if (!f->mr) {
		errf("%s: ibv_reg_mr (%" PRIu64 " bytes): %s%s", who, f->bytes, strerror(errno),
		     errno == ENOMEM || errno == EPERM ? " (check ulimit -l / RLIMIT_MEMLOCK)" : "");
		return -1;
	}
	struct ibv_qp_init_attr qa;
	memset(&qa, 0, sizeof qa);
	qa.send_cq = f->cq;
	qa.recv_cq = f->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 0;
	qa.cap.max_send_wr = f->depth;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(f->cm, f->pd, &qa)) {
		errf("%s: rdma_create_qp: %s", who, strerror(errno));
		return -1;
	}

	struct wire_req req;
	memset(&req, 0, sizeof req);
	req.magic = htobe32(WIRE_MAGIC);
	req.version = htobe16(WIRE_VERSION);
	req.flow_index = htobe16((uint16_t)f->index);
	req.write_bytes = htobe64(f->bytes);
	size_t idlen = strnlen(f->id, sizeof req.flow_id);
	memcpy(req.flow_id, f->id, idlen); /* truncated on the wire, see wire_req */

	struct rdma_conn_param cp;
	memset(&cp, 0, sizeof cp);
	cp.private_data = &req;
	cp.private_data_len = sizeof req;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7; /* 7 = retry forever on receiver-not-ready */
	if (rdma_connect(f->cm, &cp)) {
		errf("%s: rdma_connect: %s", who, strerror(errno));
		return -1;
	}
	if (wait_cm_event(f->ch, RDMA_CM_EVENT_ESTABLISHED, &ev, who, "connect"))
		return -1;
	const struct wire_rep *rep = ev->param.conn.private_data;
	if (!rep || ev->param.conn.private_data_len < sizeof *rep || be32toh(rep->magic) != WIRE_MAGIC) {
		errf("%s: connect: the peer is not an mxl-loadgen receiver (no or bad accept data)", who);
		rdma_ack_cm_event(ev);
		return -1;
	}
	f->raddr = be64toh(rep->addr);
	f->rkey = be32toh(rep->rkey);
	rdma_ack_cm_event(ev);

	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	if (ibv_query_qp(f->cm->qp, &attr, IBV_QP_PATH_MTU, &init) == 0)
		f->path_mtu = mtu_bytes(attr.path_mtu);
	return 0;
}

static void sender_teardown(struct flow *f, bool disconnect)
{
	if (f->cm && disconnect && f->cm->qp) {
		struct rdma_cm_event *ev;
		if (rdma_disconnect(f->cm) == 0) {
			/* Best effort: a missing DISCONNECTED event must not turn a good run into a failure. */
			struct pollfd pfd = { .fd = f->ch->fd, .events = POLLIN };
			if (poll(&pfd, 1, 5000) > 0 && rdma_get_cm_event(f->ch, &ev) == 0)
				rdma_ack_cm_event(ev);
		}
	}
	if (f->cm && f->cm->qp)
		rdma_destroy_qp(f->cm);
	if (f->mr)
		ibv_dereg_mr(f->mr);
	if (f->cq)
		ibv_destroy_cq(f->cq);
	if (f->cc)
		ibv_destroy_comp_channel(f->cc);
	if (f->pd)
		ibv_dealloc_pd(f->pd);
	if (f->cm)
		rdma_destroy_id(f->cm);
	if (f->ch)
		rdma_destroy_event_channel(f->ch);
	free(f->buf);
	f->mr = NULL;
	f->cq = NULL;
	f->cc = NULL;
	f->pd = NULL;
	f->cm = NULL;
	f->ch = NULL;
	f->buf = NULL;
}

/*
 * Reaps send completions. With block set, waits until at least one arrives or until
 * deadline (absolute ns; 0 = wait while not stopped). Returns completions reaped, or -1.
 */
static int reap_sends(struct flow *f, bool block, int64_t deadline)
{
	struct ibv_wc wc[16];
	bool armed = false;
	for (;;) {
		int n = ibv_poll_cq(f->cq, 16, wc);
		if (n < 0) {
			flow_fail(f, "ibv_poll_cq failed");
			return -1;
		}
		for (int i = 0; i < n; i++) {
			f->outstanding--;
			if (wc[i].status != IBV_WC_SUCCESS) {
				flow_fail(f, "RDMA WRITE of grain %" PRIu64 " completed with %s (vendor_err 0x%x)",
					  wc[i].wr_id, ibv_wc_status_str(wc[i].status), wc[i].vendor_err);
				return -1;
			}
			f->completed++;
		}
		if (n > 0 || !block)
			return n;
		if (!armed) {
			if (ibv_req_notify_cq(f->cq, 0)) {
				flow_fail(f, "ibv_req_notify_cq failed");
				return -1;
			}
			armed = true;
			continue; /* poll again: a completion may have landed before arming */
		}
		int64_t now = now_ns();
		if (deadline && now >= deadline) {
			flow_fail(f, "timed out waiting for send completions (%u outstanding)", f->outstanding);
			return -1;
		}
		if (!deadline && atomic_load(&g_stop))
			return 0;
		struct pollfd pfd = { .fd = f->cc->fd, .events = POLLIN };
		int r = poll(&pfd, 1, 200);
		if (r < 0 && errno != EINTR) {
			flow_fail(f, "poll on completion channel: %s", strerror(errno));
			return -1;
		}
		if (r > 0) {
			struct ibv_cq *cq;
			void *ctx;
			if (ibv_get_cq_event(f->cc, &cq, &ctx) == 0) {
				ibv_ack_cq_events(cq, 1);
				armed = false;
			}
		}
	}
}

static void sleep_until(int64_t t)
{
	for (;;) {
		if (atomic_load(&g_stop))
			return;
		int64_t now = now_ns();
		if (now >= t)
			return;
		/* Wake at least every 200 ms to notice a signal; the target stays absolute. */
		int64_t wake = t - now > 200000000 ? now + 200000000 : t;
		struct timespec ts = { .tv_sec = wake / NS_PER_S, .tv_nsec = wake % NS_PER_S };
		int r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		if (r && r != EINTR)
			return;
	}
}

static void account_post(struct flow *f, uint64_t k, int64_t due, int64_t post)
{
	int64_t late = post - due;
	int64_t period = due_offset_ns(k + 1, f->num, f->den) - due_offset_ns(k, f->num, f->den);
	if (late > period)
		f->late++;
	if (late > f->max_late_ns)
		f->max_late_ns = late;
	f->sum_late_ns += (long double)late;
	if (f->posted == 1)
		f->first_post_ns = post;
	f->last_post_ns = post;
}

static void *sender_thread(void *arg)
{
	struct flow *f = arg;
	struct ibv_sge sge = { .addr = (uintptr_t)f->buf, .length = (uint32_t)f->bytes,
			       .lkey = f->mr ? f->mr->lkey : 0 };

	for (uint64_t k = 0; k < f->expected; k++) {
		int64_t due = f->t0 + due_offset_ns(k, f->num, f->den);
		sleep_until(due);
		if (atomic_load(&g_stop))
			break;
		if (f->pace_only) {
			int64_t post = now_ns();
			f->posted++;
			f->completed++;
			account_post(f, k, due, post);
			continue;
		}
		if (reap_sends(f, false, 0) < 0)
			return NULL;
		while (f->outstanding >= f->depth) {
			if (reap_sends(f, true, 0) < 0)
				return NULL;
			if (atomic_load(&g_stop))
				goto drain;
		}

		struct ibv_send_wr wr, *bad = NULL;
		memset(&wr, 0, sizeof wr);
		wr.wr_id = k;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.imm_data = htobe32((uint32_t)k);
		wr.wr.rdma.remote_addr = f->raddr;
		wr.wr.rdma.rkey = f->rkey;

		int64_t post = now_ns();
		int rc = ibv_post_send(f->cm->qp, &wr, &bad);
		if (rc) {
			flow_fail(f, "ibv_post_send (grain %" PRIu64 "): %s", k, strerror(rc));
			goto drain;
		}
		f->outstanding++;
		f->posted++;
		account_post(f, k, due, post);
	}
drain:;
	int64_t deadline = now_ns() + DRAIN_TIMEOUT_NS;
	while (f->outstanding > 0) {
		if (reap_sends(f, true, deadline) < 0)
			break;
	}
	return NULL;
}

static double achieved_rate(const struct flow *f)
{
	if (f->posted < 2 || f->last_post_ns <= f->first_post_ns)
		return 0.0;
	return (double)(f->posted - 1) * 1e9 / (double)(f->last_post_ns - f->first_post_ns);
}

static uint64_t packets_per_write(const struct flow *f)
{
	return f->path_mtu ? (f->bytes + (uint64_t)f->path_mtu - 1) / (uint64_t)f->path_mtu : 0;
}

static void print_send_report(struct flow *flows, size_t n, int64_t duration_ns, int64_t elapsed_ns, bool json)
{
	uint64_t t_exp = 0, t_sent = 0, t_bytes = 0, t_late = 0, t_pkts = 0;
	double t_bps = 0.0;
	for (size_t i = 0; i < n; i++) {
		struct flow *f = &flows[i];
		t_exp += f->expected;
		t_sent += f->completed;
		t_bytes += f->completed * f->bytes;
		t_late += f->late;
		t_pkts += f->completed * packets_per_write(f);
		t_bps += achieved_rate(f) * (double)f->bytes;
	}
	if (json) {
		FILE *o = stdout;
		fprintf(o, "{\"role\":\"send\",\"version\":\"%s\",\"durationNs\":%" PRId64 ",\"elapsedNs\":%" PRId64
			   ",\"flows\":[",
			LOADGEN_VERSION, duration_ns, elapsed_ns);
		for (size_t i = 0; i < n; i++) {
			struct flow *f = &flows[i];
			fprintf(o, "%s{\"flowId\":", i ? "," : "");
			json_str(o, f->id);
			fprintf(o, ",\"writeBytes\":%" PRIu64 ",\"rate\":\"%" PRIu64 "/%" PRIu64 "\"", f->bytes, f->num,
				f->den);
			fprintf(o, ",\"device\":");
			json_str(o, f->device);
			fprintf(o,
				",\"pathMtu\":%d,\"packetsPerWrite\":%" PRIu64 ",\"grainsExpected\":%" PRIu64
				",\"grainsPosted\":%" PRIu64 ",\"grainsSent\":%" PRIu64 ",\"bytesSent\":%" PRIu64
				",\"packetsSent\":%" PRIu64 ",\"lateGrains\":%" PRIu64 ",\"maxLatenessNs\":%" PRId64
				",\"meanLatenessNs\":%.0f,\"achievedRate\":%.6f,\"nominalRate\":%.6f"
				",\"achievedBytesPerSecond\":%.0f,\"error\":",
				f->path_mtu, packets_per_write(f), f->expected, f->posted, f->completed,
				f->completed * f->bytes, f->completed * packets_per_write(f), f->late, f->max_late_ns,
				f->posted ? (double)(f->sum_late_ns / f->posted) : 0.0, achieved_rate(f),
				(double)f->num / (double)f->den, achieved_rate(f) * (double)f->bytes);
			if (f->failed)
				json_str(o, f->errmsg);
			else
				fputs("null", o);
			fputc('}', o);
		}
		fprintf(o,
			"],\"totals\":{\"grainsExpected\":%" PRIu64 ",\"grainsSent\":%" PRIu64 ",\"bytesSent\":%" PRIu64
			",\"packetsSent\":%" PRIu64 ",\"lateGrains\":%" PRIu64 ",\"achievedBytesPerSecond\":%.0f}}\n",
			t_exp, t_sent, t_bytes, t_pkts, t_late, t_bps);
		fflush(o);
		return;
	}
	FILE *o = stdout;
	for (size_t i = 0; i < n; i++) {
		struct flow *f = &flows[i];
		fprintf(o,
			"flow %s: %" PRIu64 "/%" PRIu64 " grains, %" PRIu64 " bytes, late %" PRIu64
			" (max %.3f ms, mean %.3f ms), rate %.4f/s (nominal %.4f/s), %.3f MB/s, %s mtu %d -> %" PRIu64
			" pkts/write\n",
			f->id, f->completed, f->expected, f->completed * f->bytes, f->late, (double)f->max_late_ns / 1e6,
			f->posted ? (double)(f->sum_late_ns / f->posted) / 1e6 : 0.0, achieved_rate(f),
			(double)f->num / (double)f->den, achieved_rate(f) * (double)f->bytes / 1e6,
			f->device[0] ? f->device : "-", f->path_mtu, packets_per_write(f));
		if (f->failed)
			fprintf(o, "flow %s: ERROR: %s\n", f->id, f->errmsg);
	}
	fprintf(o,
		"total: %" PRIu64 "/%" PRIu64 " grains, %" PRIu64 " bytes, %" PRIu64 " packets (model), late %" PRIu64
		", %.3f MB/s, elapsed %.3f s\n",
		t_sent, t_exp, t_bytes, t_pkts, t_late, t_bps / 1e6, (double)elapsed_ns / 1e9);
	fflush(o);
}

static void print_dry_run(struct flow *flows, size_t n, int64_t duration_ns, uint64_t show, bool json)
{
	FILE *o = stdout;
	if (json)
		fprintf(o, "{\"role\":\"dry-run\",\"durationNs\":%" PRId64 ",\"flows\":[", duration_ns);
	for (size_t i = 0; i < n; i++) {
		struct flow *f = &flows[i];
		uint64_t total = grains_in_duration(duration_ns, f->num, f->den);
		uint64_t shown = show < total ? show : total;
		if (json) {
			fprintf(o, "%s{\"flowId\":", i ? "," : "");
			json_str(o, f->id);
			fprintf(o,
				",\"writeBytes\":%" PRIu64 ",\"rate\":\"%" PRIu64 "/%" PRIu64 "\",\"grainsExpected\":%" PRIu64
				",\"bytesExpected\":%" PRIu64 ",\"schedule\":[",
				f->bytes, f->num, f->den, total, total * f->bytes);
		} else {
			fprintf(o,
				"flow %s: bytes=%" PRIu64 " rate=%" PRIu64 "/%" PRIu64 " grains=%" PRIu64 " bytes_total=%" PRIu64
				"\n",
				f->id, f->bytes, f->num, f->den, total, total * f->bytes);
		}
		for (uint64_t i = 0; i < shown + (total > shown); i++) {
			uint64_t k = i < shown ? i : total - 1; /* then the last grain inside the duration */
			int64_t due = due_offset_ns(k, f->num, f->den);
			int64_t prev = k ? due_offset_ns(k - 1, f->num, f->den) : 0;
			if (json)
				fprintf(o, "%s{\"grain\":%" PRIu64 ",\"dueNs\":%" PRId64 ",\"deltaNs\":%" PRId64 "}",
					i ? "," : "", k, due, due - prev);
			else
				fprintf(o, "  grain %" PRIu64 " due %" PRId64 " ns (+%" PRId64 ")\n", k, due, due - prev);
		}
		if (json)
			fputs("]}", o);
	}
	if (json)
		fputs("]}\n", o);
	fflush(o);
}

static void usage_send(FILE *o)
{
	fprintf(o,
		"usage: %s send --connect ADDR[:PORT] (--flow SPEC ... | --flows-json FILE) --duration SECONDS\n"
		"                   [--source ADDR] [--depth N] [--json]\n"
		"       %s send (--dry-run N | --pace-only) (--flow SPEC ... | --flows-json FILE) --duration SECONDS\n"
		"                   [--json]\n"
		"\n"
		"  --connect ADDR[:PORT]  receiver address (port defaults to " DEFAULT_PORT ")\n"
		"  --source ADDR          local address to send from (selects the RDMA device)\n"
		"  --flow SPEC            id=<uuid-or-name>,bytes=<bytes per RDMA write>,rate=<num>/<den>\n"
		"                         one RDMA WRITE WITH IMM of <bytes> every den/num seconds\n"
		"  --flows-json FILE      JSON array of {\"flowId\": \"...\", \"writeBytes\": N, \"rate\": \"num/den\"}\n"
		"                         (calc --output json works as is: writeBytesPerEvent, eventRate)\n"
		"                         ('-' reads stdin); may be combined with --flow; at most %d flows\n"
		"  --duration SECONDS     schedule length; grains due before it are sent (decimals allowed)\n"
		"  --depth N              outstanding writes per flow before waiting (default %d)\n"
		"  --dry-run N            print the first N due times per flow plus the last one; no RDMA\n"
		"  --pace-only            run the schedule in real time without RDMA and report lateness\n"
		"  --json                 machine-readable report on stdout\n",
		g_prog, g_prog, MAX_FLOWS, DEFAULT_SEND_DEPTH);
}

static int cmd_send(int argc, char **argv)
{
	static struct flow flows[MAX_FLOWS];
	size_t nflows = 0;
	const char *connect_to = NULL, *source = NULL;
	int64_t duration_ns = 0;
	uint64_t depth = DEFAULT_SEND_DEPTH, dry = 0;
	bool json = false, dry_run = false, pace_only = false;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage_send(stdout);
			return EXIT_OK;
		} else if (!strcmp(a, "--json")) {
			json = true;
			continue;
		} else if (!strcmp(a, "--pace-only")) {
			pace_only = true;
			continue;
		}
		if (!v) {
			if (!strcmp(a, "--connect") || !strcmp(a, "--source") || !strcmp(a, "--flow") ||
			    !strcmp(a, "--flows-json") || !strcmp(a, "--duration") || !strcmp(a, "--depth") ||
			    !strcmp(a, "--dry-run"))
				errf("send: %s needs a value", a);
			else
				errf("send: unknown argument '%s' (see %s send --help)", a, g_prog);
			return EXIT_USAGE;
		}
		if (!strcmp(a, "--connect")) {
			connect_to = v;
		} else if (!strcmp(a, "--source")) {
			source = v;
		} else if (!strcmp(a, "--flow")) {
			if (nflows >= MAX_FLOWS) {
				errf("send: at most %d flows", MAX_FLOWS);
				return EXIT_USAGE;
			}
			memset(&flows[nflows], 0, sizeof flows[nflows]);
			if (parse_flow_spec(v, &flows[nflows]))
				return EXIT_USAGE;
			nflows++;
		} else if (!strcmp(a, "--flows-json")) {
			if (read_flows_json(v, flows, &nflows))
				return EXIT_USAGE;
		} else if (!strcmp(a, "--duration")) {
			if (parse_duration(v, &duration_ns)) {
				errf("send: --duration '%s' must be a positive number of seconds", v);
				return EXIT_USAGE;
			}
		} else if (!strcmp(a, "--depth")) {
			if (parse_u64(v, &depth) || depth < 1 || depth > 4096) {
				errf("send: --depth '%s' must be 1..4096", v);
				return EXIT_USAGE;
			}
		} else if (!strcmp(a, "--dry-run")) {
			if (parse_u64(v, &dry) || dry > 1000000) {
				errf("send: --dry-run '%s' must be 0..1000000", v);
				return EXIT_USAGE;
			}
			dry_run = true;
		} else {
			errf("send: unknown argument '%s' (see %s send --help)", a, g_prog);
			return EXIT_USAGE;
		}
		i++;
	}
	if (nflows == 0) {
		errf("send: no flows (use --flow SPEC or --flows-json FILE)");
		return EXIT_USAGE;
	}
	if (!duration_ns) {
		errf("send: --duration SECONDS is required");
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < nflows; i++)
		for (size_t j = 0; j < i; j++)
			if (!strcmp(flows[i].id, flows[j].id)) {
				errf("send: flow id '%s' given twice", flows[i].id);
				return EXIT_USAGE;
			}
	if (dry_run) {
		print_dry_run(flows, nflows, duration_ns, dry, json);
		return EXIT_OK;
	}
	if (!connect_to && !pace_only) {
		errf("send: --connect ADDR[:PORT] is required (or --dry-run N, --pace-only)");
		return EXIT_USAGE;
	}

	struct sockaddr_storage dst, src;
	socklen_t dlen, slen;
	memset(&dst, 0, sizeof dst);
	if (connect_to && resolve_addr(connect_to, false, &dst, &dlen, "--connect"))
		return EXIT_USAGE;
	if (source && connect_to) {
		if (resolve_addr(source, true, &src, &slen, "--source"))
			return EXIT_USAGE;
		/* The source port is chosen by rdma_cm. */
		if (src.ss_family == AF_INET)
			((struct sockaddr_in *)&src)->sin_port = 0;
		else if (src.ss_family == AF_INET6)
			((struct sockaddr_in6 *)&src)->sin6_port = 0;
		if (src.ss_family != dst.ss_family) {
			errf("send: --source and --connect are different address families");
			return EXIT_USAGE;
		}
	}

	install_signals();
	int rc = EXIT_OK;
	size_t ready = 0;
	for (size_t i = 0; i < nflows; i++) {
		flows[i].index = (unsigned)i;
		flows[i].depth = (unsigned)depth;
		flows[i].duration_ns = duration_ns;
		flows[i].expected = grains_in_duration(duration_ns, flows[i].num, flows[i].den);
		flows[i].pace_only = pace_only;
	}
	for (; !pace_only && ready < nflows; ready++) {
		if (sender_setup(&flows[ready], source ? (struct sockaddr *)&src : NULL, (struct sockaddr *)&dst)) {
			rc = EXIT_RUNTIME;
			ready++; /* tear this one down too */
			goto teardown;
		}
		char buf[80];
		fprintf(stderr, "%s: flow %s connected to %s via %s (path mtu %d)\n", g_prog, flows[ready].id,
			addr_str((struct sockaddr *)&dst, buf, sizeof buf), flows[ready].device, flows[ready].path_mtu);
	}

	/* A common t0 a little in the future keeps all flows' grain 0 aligned. */
	int64_t t0 = now_ns() + 50000000;
	pthread_t tids[MAX_FLOWS];
	size_t started = 0;
	for (size_t i = 0; i < nflows; i++) {
		flows[i].t0 = t0;
		int e = pthread_create(&tids[i], NULL, sender_thread, &flows[i]);
		if (e) {
			errf("send: pthread_create: %s", strerror(e));
			atomic_store(&g_stop, 1);
			rc = EXIT_RUNTIME;
			break;
		}
		started++;
	}
	for (size_t i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	int64_t elapsed = now_ns() - t0;

	for (size_t i = 0; i < nflows; i++) {
		if (flows[i].failed) {
			errf("flow %s: %s", flows[i].id, flows[i].errmsg);
			rc = EXIT_RUNTIME;
		}
	}
	if (atomic_load(&g_stop) && rc == EXIT_OK)
		errf("send: interrupted; the report covers the grains sent so far");
	print_send_report(flows, nflows, duration_ns, elapsed, json);

teardown:
	for (size_t i = 0; i < ready; i++)
		sender_teardown(&flows[i], rc == EXIT_OK);
	return rc;
}

/* ---------------------------------------------------------------- serve role */

enum conn_state { CONN_FREE, CONN_PENDING, CONN_UP, CONN_CLOSED };

struct conn {
	enum conn_state state;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	void *buf;
	uint64_t write_bytes;
	unsigned flow_index;
	char flow_id[WIRE_ID_LEN + 1];
	char peer[80];
	char device[64];

	uint64_t grains, bytes, gaps, reordered, size_mismatch, errors;
	uint32_t next_imm;
	int64_t first_ns, last_ns, up_ns, down_ns;
};

static struct conn g_conns[MAX_CONNS];
static size_t g_nconns;
static bool g_serve_error;

static void conn_release(struct conn *c)
{
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->mr)
		ibv_dereg_mr(c->mr);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->cc)
		ibv_destroy_comp_channel(c->cc);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->id)
		rdma_destroy_id(c->id);
	free(c->buf);
	c->id = NULL;
	c->mr = NULL;
	c->cq = NULL;
	c->cc = NULL;
	c->pd = NULL;
	c->buf = NULL;
}

static int post_recvs(struct conn *c, int n)
{
	/* Write-with-imm consumes a receive WQE but places no data in it: zero SGEs. */
	for (int i = 0; i < n; i++) {
		struct ibv_recv_wr wr, *bad;
		memset(&wr, 0, sizeof wr);
		wr.wr_id = (uintptr_t)c;
		int rc = ibv_post_recv(c->id->qp, &wr, &bad);
		if (rc) {
			errf("flow %s: ibv_post_recv: %s", c->flow_id, strerror(rc));
			return -1;
		}
	}
	return 0;
}

static void conn_poll(struct conn *c, bool closing)
{
	struct ibv_wc wc[32];
	int n;
	while ((n = ibv_poll_cq(c->cq, 32, wc)) > 0) {
		int repost = 0;
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				if (wc[i].status == IBV_WC_WR_FLUSH_ERR)
					continue; /* the QP went to error; the cause is reported by rdma_cm */
				errf("flow %s: receive completion error: %s (vendor_err 0x%x)", c->flow_id,
				     ibv_wc_status_str(wc[i].status), wc[i].vendor_err);
				c->errors++;
				g_serve_error = true;
				continue;
			}
			if (wc[i].opcode != IBV_WC_RECV_RDMA_WITH_IMM) {
				c->errors++;
				continue;
			}
			int64_t t = now_ns();
			uint32_t imm = be32toh(wc[i].imm_data);
			if (c->grains == 0)
				c->first_ns = t;
			else if (imm != c->next_imm) {
				uint32_t skip = imm - c->next_imm;
				if (skip < 0x80000000u)
					c->gaps += skip;
				else
					c->reordered++;
			}
			c->next_imm = imm + 1;
			c->last_ns = t;
			c->grains++;
			c->bytes += wc[i].byte_len;
			if (wc[i].byte_len != c->write_bytes)
				c->size_mismatch++;
			repost++;
		}
		if (repost && !closing && post_recvs(c, repost))
			g_serve_error = true;
	}
}

static void conn_on_cq_event(struct conn *c)
{
	struct ibv_cq *cq;
	void *ctx;
	while (ibv_get_cq_event(c->cc, &cq, &ctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		if (ibv_req_notify_cq(cq, 0))
			errf("flow %s: ibv_req_notify_cq: %s", c->flow_id, strerror(errno));
	}
	conn_poll(c, false);
}

static void handle_connect_request(struct rdma_cm_event *ev)
{
	struct rdma_cm_id *id = ev->id;
	const struct wire_req *req = ev->param.conn.private_data;
	struct wire_rep rep;
	memset(&rep, 0, sizeof rep);
	rep.magic = htobe32(WIRE_MAGIC);
	char peer[80];
	addr_str(rdma_get_peer_addr(id), peer, sizeof peer);

	if (!req || ev->param.conn.private_data_len < sizeof *req || be32toh(req->magic) != WIRE_MAGIC ||
	    be16toh(req->version) != WIRE_VERSION) {
		errf("serve: connection from %s is not an mxl-loadgen v%d sender; rejecting", peer, WIRE_VERSION);
		rep.status = htobe32(EPROTO);
		rdma_reject(id, &rep, sizeof rep);
		rdma_ack_cm_event(ev);
		rdma_destroy_id(id);
		return;
	}
	if (g_nconns >= MAX_CONNS) {
		errf("serve: more than %d connections in this run; rejecting %s", MAX_CONNS, peer);
		rep.status = htobe32(ENOSPC);
		rdma_reject(id, &rep, sizeof rep);
		rdma_ack_cm_event(ev);
		rdma_destroy_id(id);
		return;
	}
	struct conn *c = &g_conns[g_nconns++];
	memset(c, 0, sizeof *c);
	c->state = CONN_PENDING;
	c->id = id;
	id->context = c;
	c->write_bytes = be64toh(req->write_bytes);
	c->flow_index = be16toh(req->flow_index);
	memcpy(c->flow_id, req->flow_id, WIRE_ID_LEN);
	c->flow_id[WIRE_ID_LEN] = '\0';
	for (char *p = c->flow_id; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = '?';
	snprintf(c->peer, sizeof c->peer, "%s", peer);
	snprintf(c->device, sizeof c->device, "%s", ibv_get_device_name(id->verbs->device));

	const char *step = NULL;
	int err = 0;
	if (c->write_bytes == 0 || c->write_bytes > MAX_WRITE_BYTES) {
		step = "write size check";
		err = EINVAL;
		goto reject;
	}
	if (!(c->pd = ibv_alloc_pd(id->verbs))) {
		step = "ibv_alloc_pd";
		goto reject_errno;
	}
	if (!(c->cc = ibv_create_comp_channel(id->verbs)) || set_nonblock(c->cc->fd)) {
		step = "ibv_create_comp_channel";
		goto reject_errno;
	}
	if (!(c->cq = ibv_create_cq(id->verbs, RECV_DEPTH + 1, c, c->cc, 0))) {
		step = "ibv_create_cq";
		goto reject_errno;
	}
	if (ibv_req_notify_cq(c->cq, 0)) {
		step = "ibv_req_notify_cq";
		goto reject_errno;
	}
	if (posix_memalign(&c->buf, 4096, c->write_bytes)) {
		step = "allocating the target buffer";
		err = ENOMEM;
		goto reject;
	}
	memset(c->buf, 0, c->write_bytes);
	if (!(c->mr = ibv_reg_mr(c->pd, c->buf, c->write_bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE))) {
		step = "ibv_reg_mr (check ulimit -l for large buffers)";
		goto reject_errno;
	}
	struct ibv_qp_init_attr qa;
	memset(&qa, 0, sizeof qa);
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 1;
	qa.cap.max_recv_wr = RECV_DEPTH;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, c->pd, &qa)) {
		step = "rdma_create_qp";
		goto reject_errno;
	}
	if (post_recvs(c, RECV_DEPTH)) {
		step = "ibv_post_recv";
		err = EIO;
		goto reject;
	}
	rep.addr = htobe64((uintptr_t)c->buf);
	rep.rkey = htobe32(c->mr->rkey);
	struct rdma_conn_param cp;
	memset(&cp, 0, sizeof cp);
	cp.private_data = &rep;
	cp.private_data_len = sizeof rep;
	cp.rnr_retry_count = 7;
	if (rdma_accept(id, &cp)) {
		errf("serve: flow %s from %s: rdma_accept: %s", c->flow_id, peer, strerror(errno));
		rdma_ack_cm_event(ev);
		conn_release(c);
		c->state = CONN_CLOSED;
		g_serve_error = true;
		return;
	}
	rdma_ack_cm_event(ev);
	fprintf(stderr, "%s: flow %s (index %u, %" PRIu64 " bytes/write) from %s on %s: accepted\n", g_prog,
		c->flow_id, c->flow_index, c->write_bytes, peer, c->device);
	return;

reject_errno:
	err = errno ? errno : EIO;
reject:
	errf("serve: flow %s from %s: %s: %s; rejecting", c->flow_id, peer, step, strerror(err));
	rep.status = htobe32((uint32_t)err);
	rdma_reject(id, &rep, sizeof rep);
	rdma_ack_cm_event(ev);
	conn_release(c);
	c->state = CONN_CLOSED;
	g_serve_error = true;
}

static int handle_cm_event(struct rdma_event_channel *ch, struct rdma_cm_id *listen_id, bool *fatal)
{
	struct rdma_cm_event *ev;
	if (rdma_get_cm_event(ch, &ev)) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		errf("serve: rdma_get_cm_event: %s", strerror(errno));
		*fatal = true;
		return -1;
	}
	enum rdma_cm_event_type type = ev->event;
	if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		handle_connect_request(ev);
		return 1;
	}
	if (ev->id == listen_id) {
		if (type == RDMA_CM_EVENT_DEVICE_REMOVAL || type == RDMA_CM_EVENT_ADDR_CHANGE) {
			errf("serve: listener: %s", rdma_event_str(type));
			*fatal = true;
		}
		rdma_ack_cm_event(ev);
		return 1;
	}
	struct conn *c = ev->id->context;
	int status = ev->status;
	rdma_ack_cm_event(ev);
	if (!c)
		return 1;
	switch (type) {
	case RDMA_CM_EVENT_ESTABLISHED:
		c->state = CONN_UP;
		c->up_ns = now_ns();
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		if (type != RDMA_CM_EVENT_DISCONNECTED) {
			errf("serve: flow %s: %s (status %d)", c->flow_id, rdma_event_str(type), status);
			g_serve_error = true;
		}
		if (c->state == CONN_CLOSED)
			break;
		if (type == RDMA_CM_EVENT_DISCONNECTED)
			rdma_disconnect(c->id);
		conn_poll(c, true);
		c->down_ns = now_ns();
		conn_release(c);
		c->state = CONN_CLOSED;
		fprintf(stderr, "%s: flow %s: closed after %" PRIu64 " grains\n", g_prog, c->flow_id, c->grains);
		break;
	default:
		break;
	}
	return 1;
}

static double conn_rate(const struct conn *c)
{
	if (c->grains < 2 || c->last_ns <= c->first_ns)
		return 0.0;
	return (double)(c->grains - 1) * 1e9 / (double)(c->last_ns - c->first_ns);
}

static void print_serve_report(bool json)
{
	uint64_t tg = 0, tb = 0, tgap = 0, terr = 0;
	for (size_t i = 0; i < g_nconns; i++) {
		tg += g_conns[i].grains;
		tb += g_conns[i].bytes;
		tgap += g_conns[i].gaps;
		terr += g_conns[i].errors + g_conns[i].size_mismatch;
	}
	FILE *o = stdout;
	if (json) {
		fprintf(o, "{\"role\":\"serve\",\"version\":\"%s\",\"flows\":[", LOADGEN_VERSION);
		for (size_t i = 0; i < g_nconns; i++) {
			struct conn *c = &g_conns[i];
			fprintf(o, "%s{\"flowId\":", i ? "," : "");
			json_str(o, c->flow_id);
			fprintf(o, ",\"flowIndex\":%u,\"writeBytes\":%" PRIu64 ",\"peer\":", c->flow_index, c->write_bytes);
			json_str(o, c->peer);
			fprintf(o, ",\"device\":");
			json_str(o, c->device);
			fprintf(o,
				",\"grainsReceived\":%" PRIu64 ",\"bytesReceived\":%" PRIu64 ",\"missingGrains\":%" PRIu64
				",\"reorderedGrains\":%" PRIu64 ",\"sizeMismatches\":%" PRIu64 ",\"errors\":%" PRIu64
				",\"receivedRate\":%.6f}",
				c->grains, c->bytes, c->gaps, c->reordered, c->size_mismatch, c->errors, conn_rate(c));
		}
		fprintf(o,
			"],\"totals\":{\"grainsReceived\":%" PRIu64 ",\"bytesReceived\":%" PRIu64 ",\"missingGrains\":%" PRIu64
			",\"errors\":%" PRIu64 "}}\n",
			tg, tb, tgap, terr);
	} else {
		for (size_t i = 0; i < g_nconns; i++) {
			struct conn *c = &g_conns[i];
			fprintf(o,
				"flow %s: %" PRIu64 " grains, %" PRIu64 " bytes, missing %" PRIu64 ", reordered %" PRIu64
				", size mismatches %" PRIu64 ", errors %" PRIu64 ", rate %.4f/s, from %s on %s\n",
				c->flow_id, c->grains, c->bytes, c->gaps, c->reordered, c->size_mismatch, c->errors,
				conn_rate(c), c->peer, c->device);
		}
		fprintf(o, "total: %" PRIu64 " grains, %" PRIu64 " bytes, missing %" PRIu64 ", errors %" PRIu64 "\n", tg,
			tb, tgap, terr);
	}
	fflush(o);
}

static void usage_serve(FILE *o)
{
	fprintf(o,
		"usage: %s serve --bind ADDR[:PORT] [--duration SECONDS] [--until-disconnect] [--json]\n"
		"\n"
		"  --bind ADDR[:PORT]   address to listen on (port defaults to " DEFAULT_PORT "); selects the device\n"
		"  --duration SECONDS   exit after this long (default: run until SIGINT/SIGTERM)\n"
		"  --until-disconnect   exit once every flow that connected has disconnected again\n"
		"  --json               machine-readable report on stdout at exit\n"
		"Prints \"listening on ...\" to stderr when ready.\n",
		g_prog);
}

static int cmd_serve(int argc, char **argv)
{
	const char *bind_to = NULL;
	int64_t duration_ns = 0;
	bool json = false, until_disconnect = false;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage_serve(stdout);
			return EXIT_OK;
		} else if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "--until-disconnect")) {
			until_disconnect = true;
		} else if (!strcmp(a, "--bind") || !strcmp(a, "--duration")) {
			if (!v) {
				errf("serve: %s needs a value", a);
				return EXIT_USAGE;
			}
			if (!strcmp(a, "--bind")) {
				bind_to = v;
			} else if (parse_duration(v, &duration_ns)) {
				errf("serve: --duration '%s' must be a positive number of seconds", v);
				return EXIT_USAGE;
			}
			i++;
		} else {
			errf("serve: unknown argument '%s' (see %s serve --help)", a, g_prog);
			return EXIT_USAGE;
		}
	}
	if (!bind_to) {
		errf("serve: --bind ADDR[:PORT] is required");
		return EXIT_USAGE;
	}
	struct sockaddr_storage sa;
	socklen_t salen;
	if (resolve_addr(bind_to, true, &sa, &salen, "--bind"))
		return EXIT_USAGE;

	install_signals();
	struct rdma_event_channel *ch = rdma_create_event_channel();
	if (!ch) {
		errf("serve: rdma_create_event_channel: %s (is rdma_ucm loaded and /dev/infiniband/rdma_cm "
		     "accessible?)",
		     strerror(errno));
		return EXIT_RUNTIME;
	}
	struct rdma_cm_id *listen_id = NULL;
	int rc = EXIT_RUNTIME;
	char abuf[80];
	if (set_nonblock(ch->fd)) {
		errf("serve: fcntl on the rdma_cm channel: %s", strerror(errno));
		goto out;
	}
	if (rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP)) {
		errf("serve: rdma_create_id: %s", strerror(errno));
		goto out;
	}
	if (rdma_bind_addr(listen_id, (struct sockaddr *)&sa)) {
		errf("serve: rdma_bind_addr %s: %s%s", addr_str((struct sockaddr *)&sa, abuf, sizeof abuf),
		     strerror(errno), errno == EADDRNOTAVAIL || errno == ENODEV ? " (no RDMA device has that address?)" : "");
		goto out;
	}
	if (rdma_listen(listen_id, 16)) {
		errf("serve: rdma_listen: %s", strerror(errno));
		goto out;
	}
	fprintf(stderr, "%s: listening on %s (%s)\n", g_prog, addr_str(rdma_get_local_addr(listen_id), abuf, sizeof abuf),
		listen_id->verbs ? ibv_get_device_name(listen_id->verbs->device) : "any device");

	int64_t deadline = duration_ns ? now_ns() + duration_ns : 0;
	bool fatal = false;
	for (;;) {
		if (atomic_load(&g_stop) || fatal)
			break;
		if (deadline && now_ns() >= deadline)
			break;
		size_t active = 0, ever = 0;
		struct pollfd pfds[MAX_CONNS + 1];
		struct conn *owners[MAX_CONNS + 1];
		pfds[0].fd = ch->fd;
		pfds[0].events = POLLIN;
		owners[0] = NULL;
		size_t np = 1;
		for (size_t i = 0; i < g_nconns; i++) {
			struct conn *c = &g_conns[i];
			ever++;
			if (c->state == CONN_PENDING || c->state == CONN_UP) {
				active++;
				pfds[np].fd = c->cc->fd;
				pfds[np].events = POLLIN;
				owners[np++] = c;
			}
		}
		if (until_disconnect && ever > 0 && active == 0)
			break;
		int n = poll(pfds, np, 200);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			errf("serve: poll: %s", strerror(errno));
			goto out;
		}
		for (size_t i = 1; i < np; i++)
			if (pfds[i].revents && owners[i]->state != CONN_CLOSED)
				conn_on_cq_event(owners[i]);
		if (pfds[0].revents)
			while (handle_cm_event(ch, listen_id, &fatal) > 0)
				;
	}
	if (fatal)
		goto out;
	rc = g_serve_error ? EXIT_RUNTIME : EXIT_OK;
out:
	for (size_t i = 0; i < g_nconns; i++) {
		struct conn *c = &g_conns[i];
		if (c->state == CONN_PENDING || c->state == CONN_UP) {
			conn_poll(c, true);
			rdma_disconnect(c->id);
			conn_release(c);
			c->state = CONN_CLOSED;
		}
	}
	if (listen_id)
		rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(ch);
	print_serve_report(json);
	return rc;
}

/* ---------------------------------------------------------------- main */

static void usage(FILE *o)
{
	fprintf(o,
		"usage: %s serve --bind ADDR[:PORT] [--duration SECONDS] [--until-disconnect] [--json]\n"
		"       %s send --connect ADDR[:PORT] --flow SPEC [--flow SPEC ...] --duration SECONDS [--json]\n"
		"       %s send --dry-run N --flow SPEC ... --duration SECONDS [--json]\n"
		"       %s --version\n"
		"\n"
		"MXL-shaped RDMA load: one RC connection per flow, one RDMA WRITE WITH IMM of <bytes> per grain,\n"
		"grain k due at t0 + k*den/num s. SPEC is id=<uuid-or-name>,bytes=<n>,rate=<num>/<den>.\n"
		"See '%s send --help' and '%s serve --help'.\n",
		g_prog, g_prog, g_prog, g_prog, g_prog, g_prog);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("mxl-loadgen %s\n", LOADGEN_VERSION);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "send"))
		return cmd_send(argc - 2, argv + 2);
	if (!strcmp(argv[1], "serve"))
		return cmd_serve(argc - 2, argv + 2);
	errf("unknown command '%s' (expected serve or send)", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
