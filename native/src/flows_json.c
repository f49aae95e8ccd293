/* A tiny JSON reader for --flows-json: the array `calc --output json` prints. */
#include "flow.h"

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

typedef int (*jp_member_fn)(struct jp *j, const char *key, void *ctx);

/* Reads an object, calling fn for each key with the reader on its value; fn must consume it. */
static int jp_object(struct jp *j, const char *what, jp_member_fn fn, void *ctx)
{
	char key[64];
	jp_ws(j);
	if (j->p >= j->end || *j->p != '{')
		return jp_err(j, what);
	j->p++;
	jp_ws(j);
	if (j->p < j->end && *j->p == '}') {
		j->p++;
		return 0;
	}
	for (;;) {
		jp_ws(j);
		const char *key_at = j->p;
		if (j->p >= j->end || *j->p != '"')
			return jp_err(j, "expected a key");
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
		jp_ws(j);
		if (j->p >= j->end || *j->p != ':')
			return jp_err(j, "expected ':'");
		j->p++;
		jp_ws(j);
		if (fn(j, key, ctx))
			return -1;
		jp_ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == '}') {
			j->p++;
			return 0;
		}
		return jp_err(j, "expected ',' or '}'");
	}
}

static int jp_u64(struct jp *j, const char *what, uint64_t *out)
{
	char num[64];
	if (j->p < j->end && *j->p == '"')
		return jp_err(j, what);
	if (jp_number_text(j, num, sizeof num) || parse_u64(num, out))
		return jp_err(j, what);
	return 0;
}

static int jp_u32(struct jp *j, const char *what, uint32_t *out)
{
	uint64_t v;
	if (jp_u64(j, what, &v))
		return -1;
	if (v > UINT32_MAX)
		return jp_err(j, what);
	*out = (uint32_t)v;
	return 0;
}

static int jp_bool(struct jp *j, bool *out)
{
	if ((size_t)(j->end - j->p) >= 4 && !memcmp(j->p, "true", 4)) {
		j->p += 4;
		*out = true;
		return 0;
	}
	if ((size_t)(j->end - j->p) >= 5 && !memcmp(j->p, "false", 5)) {
		j->p += 5;
		*out = false;
		return 0;
	}
	return jp_err(j, "expected true or false");
}

/* One of calc's `writes`: { "bytes": N, "immediate": true|false, ... }. */
static int jp_write_member(struct jp *j, const char *key, void *ctx)
{
	struct plan_write *w = ctx;
	if (!strcmp(key, "bytes"))
		return jp_u64(j, "writes[].bytes must be a non-negative integer", &w->bytes);
	if (!strcmp(key, "immediate"))
		return jp_bool(j, &w->immediate);
	return jp_skip_value(j, 2);
}

static int jp_writes(struct jp *j, struct plan *p)
{
	if (j->p >= j->end || *j->p != '[')
		return jp_err(j, "writes must be an array of {\"bytes\", \"immediate\"} objects");
	j->p++;
	jp_ws(j);
	p->nwrites = 0;
	if (j->p < j->end && *j->p == ']') {
		j->p++;
		return 0;
	}
	for (;;) {
		if (p->nwrites >= MAX_PLAN_WRITES)
			return jp_err(j, "more than 64 writes per grain");
		struct plan_write *w = &p->writes[p->nwrites++];
		*w = (struct plan_write){ .immediate = false };
		if (jp_object(j, "expected an object in writes", jp_write_member, w))
			return -1;
		jp_ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == ']') {
			j->p++;
			return 0;
		}
		return jp_err(j, "expected ',' or ']'");
	}
}

/* calc's `audio`: the batch layout MXL sends from. */
static int jp_audio_member(struct jp *j, const char *key, void *ctx)
{
	struct audio_layout *al = ctx;
	if (!strcmp(key, "channels"))
		return jp_u32(j, "audio.channels must be an integer", &al->channels);
	if (!strcmp(key, "samplesPerBatch"))
		return jp_u32(j, "audio.samplesPerBatch must be an integer", &al->samples);
	if (!strcmp(key, "sampleBytes"))
		return jp_u32(j, "audio.sampleBytes must be an integer", &al->sample_bytes);
	if (!strcmp(key, "headerBytes"))
		return jp_u32(j, "audio.headerBytes must be an integer", &al->header_bytes);
	if (!strcmp(key, "txIovLimit"))
		return jp_u32(j, "audio.txIovLimit must be an integer", &al->iov_limit);
	if (!strcmp(key, "ringLengthSamples"))
		return jp_u64(j, "audio.ringLengthSamples must be an integer", &al->ring);
	return jp_skip_value(j, 2);
}

struct flow_read {
	struct flow *f;
	bool have_id, have_bytes, have_rate, have_writes;
	uint64_t write_bytes;
	const char *where;
};

static int jp_flow_member(struct jp *j, const char *key, void *ctx)
{
	struct flow_read *r = ctx;
	struct flow *f = r->f;
	if (!strcmp(key, "flowId")) {
		char id[FLOW_ID_MAX * 4 + 1];
		if (jp_string(j, id, sizeof id) || set_flow_id(f, id, r->where))
			return -1;
		r->have_id = true;
		return 0;
	}
	if (!strcmp(key, "writeBytes") || !strcmp(key, "writeBytesPerEvent")) {
		if (j->p < j->end && *j->p == '"')
			return jp_err(j, "writeBytes must be a number");
		if (jp_u64(j, "writeBytes must be a non-negative integer", &r->write_bytes))
			return -1;
		r->have_bytes = true;
		return 0;
	}
	if (!strcmp(key, "rate") || !strcmp(key, "eventRate")) {
		char rate[64];
		if (j->p < j->end && *j->p == '"') {
			if (jp_string(j, rate, sizeof rate))
				return -1;
		} else if (jp_number_text(j, rate, sizeof rate)) {
			return -1;
		}
		if (parse_rate(rate, &f->num, &f->den))
			return jp_err(j, "rate must be \"num/den\" (or an integer) with 1 <= num,den <= 1e9");
		r->have_rate = true;
		return 0;
	}
	if (!strcmp(key, "writes")) {
		r->have_writes = true;
		return jp_writes(j, &f->plan);
	}
	if (!strcmp(key, "audio")) {
		f->plan.audio = true;
		return jp_object(j, "audio must be an object", jp_audio_member, &f->plan.al);
	}
	return jp_skip_value(j, 1);
}

/*
 * One flow: {"flowId", "rate", and "writes" (calc's write list), "audio" (calc's batch layout,
 * which wins over writes), or "writeBytes" (one write per grain)}.
 */
static int jp_flow(struct jp *j, struct flow *f, size_t index)
{
	char where[96];
	snprintf(where, sizeof where, "--flows-json %s: entry %zu", j->file, index);
	struct flow_read r = { .f = f, .where = where };
	if (jp_object(j, "expected an object for each flow", jp_flow_member, &r))
		return -1;
	if (!r.have_id || (!r.have_bytes && !r.have_writes && !f->plan.audio) || !r.have_rate) {
		errf("%s: missing \"%s\"", where,
		     !r.have_id ? "flowId" : !r.have_bytes && !r.have_writes && !f->plan.audio ? "writeBytes" : "rate");
		return -1;
	}
	if (!r.have_writes && !f->plan.audio) {
		f->plan.nwrites = 1;
		f->plan.writes[0] = (struct plan_write){ .bytes = r.write_bytes, .immediate = true };
	}
	return check_flow(f, where);
}

int read_flows_json(const char *file, struct flow *flows, size_t *nflows)
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
