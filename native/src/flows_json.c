/*
 * --flows-json: the array `calc --output json` prints, parsed with jansson (Debian's
 * libjansson-dev). Only the keys the sender uses are read; every other key is ignored.
 */
#include <jansson.h>

#include "flow.h"

/* Largest --flows-json accepted: far above any config's calc output. */
#define FLOWS_JSON_MAX_BYTES (64u << 20)

struct flows_doc {
  const char *file;
  size_t index; /* the entry being read */
};

static int doc_err(const struct flows_doc *d, const char *what) {
  errf("--flows-json %s: entry %zu: %s", d->file, d->index, what);
  return -1;
}

static int get_u64(const struct flows_doc *d, const json_t *v, const char *what, uint64_t *out) {
  if (!json_is_integer(v) || json_integer_value(v) < 0) return doc_err(d, what);
  *out = (uint64_t)json_integer_value(v);
  return 0;
}

static int get_u32(const struct flows_doc *d, const json_t *v, const char *what, uint32_t *out) {
  uint64_t wide;
  if (get_u64(d, v, what, &wide)) return -1;
  if (wide > UINT32_MAX) return doc_err(d, what);
  *out = (uint32_t)wide;
  return 0;
}

/* calc's `writes`: [{ "bytes": N, "immediate": true|false, ... }]. */
static int read_writes(const struct flows_doc *d, const json_t *v, struct plan *p) {
  if (!json_is_array(v)) return doc_err(d, "writes must be an array of {\"bytes\", \"immediate\"} objects");
  if (json_array_size(v) > MAX_PLAN_WRITES) return doc_err(d, "more than 64 writes per grain");
  p->nwrites = 0;
  size_t i;
  const json_t *w;
  json_array_foreach(v, i, w) {
    if (!json_is_object(w)) return doc_err(d, "expected an object in writes");
    struct plan_write *pw = &p->writes[p->nwrites++];
    *pw = (struct plan_write){.immediate = false};
    if (get_u64(d, json_object_get(w, "bytes"), "writes[].bytes must be a non-negative integer", &pw->bytes)) return -1;
    const json_t *imm = json_object_get(w, "immediate");
    if (imm && !json_is_boolean(imm)) return doc_err(d, "writes[].immediate must be true or false");
    pw->immediate = imm && json_is_true(imm);
  }
  return 0;
}

/* calc's `audio`: the batch layout MXL sends from. Absent members stay 0 (plan_problem checks). */
static int read_audio(const struct flows_doc *d, const json_t *v, struct audio_layout *al) {
  if (!json_is_object(v)) return doc_err(d, "audio must be an object");
  static const struct {
    const char *key;
    size_t offset;
  } u32s[] = {
      {"channels", offsetof(struct audio_layout, channels)},        {"samplesPerBatch", offsetof(struct audio_layout, samples)},
      {"sampleBytes", offsetof(struct audio_layout, sample_bytes)}, {"headerBytes", offsetof(struct audio_layout, header_bytes)},
      {"txIovLimit", offsetof(struct audio_layout, iov_limit)},
  };
  char what[64];
  for (size_t i = 0; i < sizeof u32s / sizeof u32s[0]; i++) {
    const json_t *m = json_object_get(v, u32s[i].key);
    snprintf(what, sizeof what, "audio.%s must be an integer", u32s[i].key);
    if (m && get_u32(d, m, what, (uint32_t *)((char *)al + u32s[i].offset))) return -1;
  }
  const json_t *ring = json_object_get(v, "ringLengthSamples");
  if (ring && get_u64(d, ring, "audio.ringLengthSamples must be an integer", &al->ring)) return -1;
  return 0;
}

/* `rate` (or `eventRate`): "num/den", or an integer. */
static int read_rate(const struct flows_doc *d, const json_t *v, struct flow *f) {
  char text[64];
  if (json_is_string(v)) snprintf(text, sizeof text, "%s", json_string_value(v));
  else if (json_is_integer(v)) snprintf(text, sizeof text, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
  else text[0] = '\0';
  if (parse_rate(text, &f->num, &f->den)) return doc_err(d, "rate must be \"num/den\" (or an integer) with 1 <= num,den <= 1e9");
  return 0;
}

/* The first of `keys` the object has (calc's current name first, then the older one). */
static const json_t *member(const json_t *o, const char *key, const char *older) {
  const json_t *v = json_object_get(o, key);
  return v ? v : json_object_get(o, older);
}

/*
 * One flow: {"flowId", "rate", and "writes" (calc's write list), "audio" (calc's batch layout,
 * which wins over writes), or "writeBytes" (one write per grain)}.
 */
static int read_flow(const struct flows_doc *d, const json_t *o, struct flow *f) {
  char where[96];
  snprintf(where, sizeof where, "--flows-json %s: entry %zu", d->file, d->index);
  if (!json_is_object(o)) return doc_err(d, "expected an object for each flow");
  const json_t *id = json_object_get(o, "flowId");
  const json_t *bytes = member(o, "writeBytes", "writeBytesPerEvent");
  const json_t *rate = member(o, "rate", "eventRate");
  const json_t *writes = json_object_get(o, "writes");
  const json_t *audio = json_object_get(o, "audio");
  const char *missing = !id ? "flowId" : !bytes && !writes && !audio ? "writeBytes" : !rate ? "rate" : NULL;
  if (missing) {
    errf("%s: missing \"%s\"", where, missing);
    return -1;
  }
  if (!json_is_string(id)) return doc_err(d, "flowId must be a string");
  if (set_flow_id(f, json_string_value(id), where) || read_rate(d, rate, f)) return -1;
  uint64_t write_bytes = 0;
  if (bytes && !json_is_number(bytes)) return doc_err(d, "writeBytes must be a number");
  if (bytes && get_u64(d, bytes, "writeBytes must be a non-negative integer", &write_bytes)) return -1;
  if (writes && read_writes(d, writes, &f->plan)) return -1;
  if (audio) {
    f->plan.audio = true;
    if (read_audio(d, audio, &f->plan.al)) return -1;
  }
  if (!writes && !audio) {
    f->plan.nwrites = 1;
    f->plan.writes[0] = (struct plan_write){.bytes = write_bytes, .immediate = true};
  }
  return check_flow(f, where);
}

/* The whole file (or stdin) in memory, at most FLOWS_JSON_MAX_BYTES. */
static char *slurp(const char *file, size_t *len) {
  FILE *fp = strcmp(file, "-") ? fopen(file, "rb") : stdin;
  if (!fp) {
    errf("--flows-json %s: open: %s", file, strerror(errno));
    return NULL;
  }
  size_t cap = 1 << 16;
  char *data = malloc(cap);
  *len = 0;
  while (data) {
    if (*len == cap) {
      if (cap >= FLOWS_JSON_MAX_BYTES) {
        errf("--flows-json %s: file larger than 64 MiB", file);
        break;
      }
      char *bigger = realloc(data, cap *= 2);
      if (!bigger) break;
      data = bigger;
    }
    size_t got = fread(data + *len, 1, cap - *len, fp);
    *len += got;
    if (got > 0) continue;
    if (ferror(fp)) {
      errf("--flows-json %s: read: %s", file, strerror(errno));
      break;
    }
    if (fp != stdin) fclose(fp);
    return data;
  }
  if (!data) errf("out of memory");
  if (fp != stdin) fclose(fp);
  free(data);
  return NULL;
}

int read_flows_json(const char *file, struct flow *flows, size_t *nflows) {
  size_t len;
  char *data = slurp(file, &len);
  if (!data) return -1;
  size_t skip = len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3) ? 3 : 0; /* a UTF-8 BOM */
  json_error_t jerr;
  json_t *root = json_loadb(data + skip, len - skip, JSON_DECODE_ANY, &jerr);
  free(data);
  if (!root) {
    errf("--flows-json %s: line %d column %d: %s", file, jerr.line, jerr.column, jerr.text);
    return -1;
  }
  int rc = 0;
  struct flows_doc d = {.file = file};
  if (!json_is_array(root)) {
    errf("--flows-json %s: expected a JSON array of {\"flowId\", \"writeBytes\", \"rate\"} objects", file);
    rc = -1;
  }
  const json_t *o;
  json_array_foreach(root, d.index, o) {
    if (rc) break;
    if (*nflows >= MAX_FLOWS) {
      errf("--flows-json %s: more than %d flows in total", file, MAX_FLOWS);
      rc = -1;
      break;
    }
    struct flow *f = &flows[*nflows];
    memset(f, 0, sizeof *f);
    rc = read_flow(&d, o, f);
    if (!rc) (*nflows)++;
  }
  json_decref(root);
  return rc;
}
