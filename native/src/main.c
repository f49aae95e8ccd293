/*
 * mxl-loadgen: an MXL-shaped RDMA load generator.
 *
 * MXL fabrics (verbs provider, RC over rdma_cm) moves a grain with one RDMA WRITE WITH IMM and an
 * audio batch with a list of writes of at most 4 scatter-gather entries each (header entry, one
 * entry per channel and ring fragment). This program reproduces that traffic shape without any
 * media knowledge: each flow is a rate (num/den) and a transfer plan, normally the exporter's
 * `calc --output json` (transfer.c).
 *
 *   serve: accepts one RC connection per flow, registers a target buffer per flow and counts the
 *          write-with-immediate completions it receives.
 *   send:  one connection (one QP) per flow, one thread per flow, grain k posted at
 *          t0 + floor(k * den * 1e9 / num) ns on CLOCK_MONOTONIC.
 *
 * Files: loadgen.h/common.c (basics), schedule.c (pacing maths), transfer.c (writes per event),
 * flowspec.c and flows_json.c (flow definitions), cm.c (addresses, rdma_cm), send.c and
 * send_cmd.c (the sending role), serve.c (the receiving role), main.c (this dispatch).
 *
 * Immediate data: the low 32 bits of the grain index. Flows are told apart by their QP, not by
 * the immediate, exactly as MXL keeps one endpoint per flow.
 */
#include "loadgen.h"

int cmd_send(int argc, char **argv);
int cmd_serve(int argc, char **argv);

static void usage(FILE *o) {
  fprintf(o,
          "usage: %s serve --bind ADDR[:PORT] [--duration SECONDS] [--until-disconnect] [--json]\n"
          "       %s send --connect ADDR[:PORT] --flow SPEC [--flow SPEC ...] --duration SECONDS [--json]\n"
          "       %s send --dry-run N --flow SPEC ... --duration SECONDS [--json]\n"
          "       %s --version\n"
          "\n"
          "MXL-shaped RDMA load: one RC connection per flow, the RDMA writes MXL issues per grain or audio batch,\n"
          "grain k due at t0 + k*den/num s. SPEC is id=<uuid-or-name>,bytes=<n>,rate=<num>/<den>.\n"
          "See '%s send --help' and '%s serve --help'.\n",
          g_prog, g_prog, g_prog, g_prog, g_prog, g_prog);
}

int main(int argc, char **argv) {
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
  if (!strcmp(argv[1], "send")) return cmd_send(argc - 2, argv + 2);
  if (!strcmp(argv[1], "serve")) return cmd_serve(argc - 2, argv + 2);
  errf("unknown command '%s' (expected serve or send)", argv[1]);
  usage(stderr);
  return EXIT_USAGE;
}
