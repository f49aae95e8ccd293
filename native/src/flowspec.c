/* --flow id=...,bytes=...,rate=...: one RDMA WRITE WITH IMM of <bytes> per grain. Also rates and durations. */
#include "flow.h"

int parse_rate(const char *s, uint64_t *num, uint64_t *den) {
  char tmp[64];
  if (strlen(s) >= sizeof tmp) return -1;
  strcpy(tmp, s);
  char *slash = strchr(tmp, '/');
  if (slash) {
    *slash = '\0';
    if (parse_u64(tmp, num) || parse_u64(slash + 1, den)) return -1;
  } else {
    if (parse_u64(tmp, num)) return -1;
    *den = 1;
  }
  /* Bounds keep k * den * 1e9 far inside 128 bits and periods >= 1 ns. */
  if (*num == 0 || *den == 0 || *num > 1000000000ull || *den > 1000000000ull) return -1;
  if (*den * (uint64_t)NS_PER_S / *num == 0) return -1;
  return 0;
}

/* Decimal seconds ("10", "2.5", "0.001") into integer nanoseconds without floating point. */
int parse_duration(const char *s, int64_t *out) {
  if (!s || !*s) return -1;
  int64_t whole = 0, frac = 0;
  int frac_digits = 0;
  const char *p = s;
  if (!isdigit((unsigned char)*p) && *p != '.') return -1;
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
  if (*p) return -1;
  while (frac_digits < 9) {
    frac *= 10;
    frac_digits++;
  }
  *out = whole * NS_PER_S + frac;
  return *out > 0 ? 0 : -1;
}

int set_flow_id(struct flow *f, const char *id, const char *where) {
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

int check_flow(struct flow *f, const char *where) {
  if (!f->plan.audio && f->plan.nwrites == 1 && (f->plan.writes[0].bytes == 0 || f->plan.writes[0].bytes > MAX_WRITE_BYTES)) {
    errf("%s: bytes must be 1..%llu", where, (unsigned long long)MAX_WRITE_BYTES);
    return -1;
  }
  const char *problem = plan_problem(&f->plan);
  if (problem) {
    errf("%s: %s", where, problem);
    return -1;
  }
  return 0;
}

/* id=<id>,bytes=<n>,rate=<num>/<den>; the id may not contain ',' (use --flows-json for that). */
int parse_flow_spec(const char *spec, struct flow *f) {
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
      if (set_flow_id(f, val, "--flow")) goto out;
      have_id = true;
    } else if (!strcmp(tok, "bytes")) {
      f->plan.nwrites = 1;
      f->plan.writes[0].immediate = true;
      if (parse_u64(val, &f->plan.writes[0].bytes)) {
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
  if (check_flow(f, "--flow")) goto out;
  rc = 0;
out:
  free(copy);
  return rc;
}
