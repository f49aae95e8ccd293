/* The sending role's command line and reports (`mxl-loadgen send`). */
#include "send.h"
#include "cm.h"
#include "schedule.h"

static double achieved_rate(const struct flow *f) {
  if (f->posted < 2 || f->last_post_ns <= f->first_post_ns) return 0.0;
  return (double)(f->posted - 1) * 1e9 / (double)(f->last_post_ns - f->first_post_ns);
}

/* Bytes of one grain's writes (the receiver's region). */
static uint64_t event_bytes(const struct flow *f) { return plan_event_bytes(&f->plan); }

/* Packets of a grain that does not wrap the ring (the plan's first event), at the path MTU. */
static uint64_t packets_per_event(const struct flow *f) {
  struct event ev;
  plan_event(&f->plan, f->plan.audio ? f->plan.al.samples : 0, &ev);
  return event_packets(&ev, f->path_mtu);
}

/* "5776+7680+1920": the writes of the event whose audio batch ends at head. */
static void print_writes(FILE *o, const struct flow *f, uint64_t head) {
  struct event ev;
  plan_event(&f->plan, head, &ev);
  for (unsigned w = 0; w < ev.nwrites; w++)
    fprintf(o, "%s%" PRIu64 "%s", w ? "+" : "", ev.writes[w].bytes, ev.writes[w].immediate ? "i" : "");
}

static void print_send_report(struct flow *flows, size_t n, int64_t duration_ns, int64_t elapsed_ns, bool json) {
  uint64_t t_exp = 0, t_sent = 0, t_bytes = 0, t_late = 0, t_pkts = 0;
  double t_bps = 0.0;
  for (size_t i = 0; i < n; i++) {
    struct flow *f = &flows[i];
    t_exp += f->expected;
    t_sent += f->completed;
    t_bytes += f->completed * event_bytes(f);
    t_late += f->late;
    t_pkts += f->packets_sent;
    t_bps += achieved_rate(f) * (double)event_bytes(f);
  }
  if (json) {
    FILE *o = stdout;
    fprintf(o, "{\"role\":\"send\",\"version\":\"%s\",\"durationNs\":%" PRId64 ",\"elapsedNs\":%" PRId64 ",\"flows\":[", LOADGEN_VERSION,
            duration_ns, elapsed_ns);
    for (size_t i = 0; i < n; i++) {
      struct flow *f = &flows[i];
      fprintf(o, "%s{\"flowId\":", i ? "," : "");
      json_str(o, f->id);
      fprintf(o, ",\"writeBytes\":%" PRIu64 ",\"rate\":\"%" PRIu64 "/%" PRIu64 "\"", event_bytes(f), f->num, f->den);
      fprintf(o, ",\"device\":");
      json_str(o, f->device);
      fprintf(o,
              ",\"pathMtu\":%d,\"packetsPerWrite\":%" PRIu64 ",\"writesSent\":%" PRIu64 ",\"wraps\":%" PRIu64 ",\"grainsExpected\":%" PRIu64
              ",\"grainsPosted\":%" PRIu64 ",\"grainsSent\":%" PRIu64 ",\"bytesSent\":%" PRIu64 ",\"packetsSent\":%" PRIu64
              ",\"lateGrains\":%" PRIu64 ",\"maxLatenessNs\":%" PRId64 ",\"meanLatenessNs\":%.0f,\"achievedRate\":%.6f,\"nominalRate\":%.6f"
              ",\"achievedBytesPerSecond\":%.0f,\"error\":",
              f->path_mtu, packets_per_event(f), f->writes_sent, f->wraps, f->expected, f->posted, f->completed,
              f->completed * event_bytes(f), f->packets_sent, f->late, f->max_late_ns,
              f->posted ? (double)(f->sum_late_ns / f->posted) : 0.0, achieved_rate(f), (double)f->num / (double)f->den,
              achieved_rate(f) * (double)event_bytes(f));
      if (f->failed) json_str(o, f->errmsg);
      else fputs("null", o);
      fputc('}', o);
    }
    fprintf(o,
            "],\"totals\":{\"grainsExpected\":%" PRIu64 ",\"grainsSent\":%" PRIu64 ",\"bytesSent\":%" PRIu64 ",\"packetsSent\":%" PRIu64
            ",\"lateGrains\":%" PRIu64 ",\"achievedBytesPerSecond\":%.0f}}\n",
            t_exp, t_sent, t_bytes, t_pkts, t_late, t_bps);
    fflush(o);
    return;
  }
  FILE *o = stdout;
  for (size_t i = 0; i < n; i++) {
    struct flow *f = &flows[i];
    fprintf(o,
            "flow %s: %" PRIu64 "/%" PRIu64 " grains, %" PRIu64 " bytes, late %" PRIu64
            " (max %.3f ms, mean %.3f ms), rate %.4f/s (nominal %.4f/s), %.3f MB/s, %s mtu %d -> %" PRIu64 " pkts/grain, %" PRIu64
            " writes, %" PRIu64 " wraps\n",
            f->id, f->completed, f->expected, f->completed * event_bytes(f), f->late, (double)f->max_late_ns / 1e6,
            f->posted ? (double)(f->sum_late_ns / f->posted) / 1e6 : 0.0, achieved_rate(f), (double)f->num / (double)f->den,
            achieved_rate(f) * (double)event_bytes(f) / 1e6, f->device[0] ? f->device : "-", f->path_mtu, packets_per_event(f),
            f->writes_sent, f->wraps);
    if (f->failed) fprintf(o, "flow %s: ERROR: %s\n", f->id, f->errmsg);
  }
  fprintf(o,
          "total: %" PRIu64 "/%" PRIu64 " grains, %" PRIu64 " bytes, %" PRIu64 " packets (model), late %" PRIu64
          ", %.3f MB/s, elapsed %.3f s\n",
          t_sent, t_exp, t_bytes, t_pkts, t_late, t_bps / 1e6, (double)elapsed_ns / 1e9);
  fflush(o);
}

static void print_dry_run(struct flow *flows, size_t n, int64_t duration_ns, uint64_t show, bool json) {
  FILE *o = stdout;
  if (json) fprintf(o, "{\"role\":\"dry-run\",\"durationNs\":%" PRId64 ",\"flows\":[", duration_ns);
  for (size_t i = 0; i < n; i++) {
    struct flow *f = &flows[i];
    uint64_t total = grains_in_duration(duration_ns, f->num, f->den);
    uint64_t shown = show < total ? show : total;
    if (json) {
      fprintf(o, "%s{\"flowId\":", i ? "," : "");
      json_str(o, f->id);
      fprintf(o,
              ",\"writeBytes\":%" PRIu64 ",\"rate\":\"%" PRIu64 "/%" PRIu64 "\",\"grainsExpected\":%" PRIu64 ",\"bytesExpected\":%" PRIu64
              ",\"schedule\":[",
              event_bytes(f), f->num, f->den, total, total * event_bytes(f));
    } else {
      fprintf(o, "flow %s: bytes=%" PRIu64 " rate=%" PRIu64 "/%" PRIu64 " grains=%" PRIu64 " bytes_total=%" PRIu64 "\n", f->id,
              event_bytes(f), f->num, f->den, total, total * event_bytes(f));
    }
    for (uint64_t i = 0; i < shown + (total > shown); i++) {
      uint64_t k = i < shown ? i : total - 1; /* then the last grain inside the duration */
      int64_t due = due_offset_ns(k, f->num, f->den);
      int64_t prev = k ? due_offset_ns(k - 1, f->num, f->den) : 0;
      uint64_t head = f->head + k * f->plan.al.samples;
      if (json) {
        fprintf(o, "%s{\"grain\":%" PRIu64 ",\"dueNs\":%" PRId64 ",\"deltaNs\":%" PRId64 ",\"writes\":\"", i ? "," : "", k, due,
                due - prev);
        print_writes(o, f, head);
        fputs("\"}", o);
      } else {
        fprintf(o, "  grain %" PRIu64 " due %" PRId64 " ns (+%" PRId64 ") writes ", k, due, due - prev);
        print_writes(o, f, head);
        fputc('\n', o);
      }
    }
    if (json) fputs("]}", o);
  }
  if (json) fputs("]}\n", o);
  fflush(o);
}
static void usage_send(FILE *o) {
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
          "                         (calc --output json works as is: its \"writes\" per grain, and for\n"
          "                         audio its \"audio\" batch layout, sent as MXL does: see README)\n"
          "                         ('-' reads stdin); may be combined with --flow; at most %d flows\n"
          "  --duration SECONDS     schedule length; grains due before it are sent (decimals allowed)\n"
          "  --depth N              outstanding writes per flow before waiting (default %d; at least\n"
          "                         the writes of one grain)\n"
          "  --audio-head N         audio: the first batch ends at sample index N (default: the\n"
          "                         realtime clock as MXL's writer does; 0 with --dry-run)\n"
          "  --dry-run N            print the first N due times per flow plus the last one; no RDMA\n"
          "  --pace-only            run the schedule in real time without RDMA and report lateness\n"
          "  --json                 machine-readable report on stdout\n",
          g_prog, g_prog, MAX_FLOWS, DEFAULT_SEND_DEPTH);
}

/*
 * The end index of a flow's first audio batch: given, or like mxl-gst-testsrc, the sample index
 * of now on the realtime clock (its phase in the ring is then arbitrary, as with MXL).
 */
static uint64_t first_head(const struct flow *f, uint64_t given) {
  if (!f->plan.audio) return 0;
  uint64_t samples = f->plan.al.samples;
  if (given != UINT64_MAX) return given < samples ? samples : given;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  unsigned __int128 ns = (unsigned __int128)ts.tv_sec * NS_PER_S + (unsigned __int128)ts.tv_nsec;
  /* samples per second = samples per batch x batches per second (num/den) */
  return (uint64_t)(ns * samples * f->num / ((unsigned __int128)f->den * NS_PER_S));
}

int cmd_send(int argc, char **argv) {
  static struct flow flows[MAX_FLOWS];
  size_t nflows = 0;
  const char *connect_to = NULL, *source = NULL;
  int64_t duration_ns = 0;
  uint64_t depth = DEFAULT_SEND_DEPTH, dry = 0, audio_head = 0;
  bool audio_head_given = false;
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
      if (!strcmp(a, "--connect") || !strcmp(a, "--source") || !strcmp(a, "--flow") || !strcmp(a, "--flows-json") ||
          !strcmp(a, "--duration") || !strcmp(a, "--depth") || !strcmp(a, "--dry-run") || !strcmp(a, "--audio-head"))
        errf("send: %s needs a value", a);
      else errf("send: unknown argument '%s' (see %s send --help)", a, g_prog);
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
      if (parse_flow_spec(v, &flows[nflows])) return EXIT_USAGE;
      nflows++;
    } else if (!strcmp(a, "--flows-json")) {
      if (read_flows_json(v, flows, &nflows)) return EXIT_USAGE;
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
    } else if (!strcmp(a, "--audio-head")) {
      if (parse_u64(v, &audio_head)) {
        errf("send: --audio-head '%s' must be a sample index", v);
        return EXIT_USAGE;
      }
      audio_head_given = true;
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
  for (size_t i = 0; i < nflows; i++) flows[i].head = first_head(&flows[i], audio_head_given || dry_run ? audio_head : UINT64_MAX);
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
  if (connect_to && resolve_addr(connect_to, false, &dst, &dlen, "--connect")) return EXIT_USAGE;
  if (source && connect_to) {
    if (resolve_addr(source, true, &src, &slen, "--source")) return EXIT_USAGE;
    /* The source port is chosen by rdma_cm. */
    if (src.ss_family == AF_INET) ((struct sockaddr_in *)&src)->sin_port = 0;
    else if (src.ss_family == AF_INET6) ((struct sockaddr_in6 *)&src)->sin6_port = 0;
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
    unsigned most = plan_max_writes(&flows[i].plan);
    flows[i].depth = (unsigned)depth > most ? (unsigned)depth : most;
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
  for (size_t i = 0; i < started; i++) pthread_join(tids[i], NULL);
  int64_t elapsed = now_ns() - t0;

  for (size_t i = 0; i < nflows; i++) {
    if (flows[i].failed) {
      errf("flow %s: %s", flows[i].id, flows[i].errmsg);
      rc = EXIT_RUNTIME;
    }
  }
  if (atomic_load(&g_stop) && rc == EXIT_OK) errf("send: interrupted; the report covers the grains sent so far");
  print_send_report(flows, nflows, duration_ns, elapsed, json);

teardown:
  for (size_t i = 0; i < ready; i++) sender_teardown(&flows[i], rc == EXIT_OK);
  return rc;
}
