#!/usr/bin/env bash
# Runs inside the soft-RoCE guest (test/rxe/run.sh, scenario "scale"): the exporter beside
# hundreds of RC QPs, at the default connection series budget (config.yaml), through three phases:
#   idle   the exporter alone (no QP but the kernel's): its CPU over CPU_SECONDS
#   qps    + `ib_write_bw -q N` from rxe0 to rxe1 without RDMA CM (its server's N QPs stay in RTR,
#          its client's N go to RTS); its few writes done, --wait_destroy holds the 2N QPs idle to
#          the end: the same CPU reading, the kernel's table (`rdma res show qp`) and its restrack
#          dumps (capture-restrack.mjs) beside the exporter's scrape
#   mxl    + real MXL flow A (320x180p25: writer, fabrics target on rxe1, initiator on rxe0, bind:
#          auto), a full window after it is measured by its connections
# check.mjs judges the saved scrapes into OUT/scale-report.json. Timeline: OUT/events.txt.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
: "${RXE_OUT:?RXE_OUT is set by guest.sh}"
source test/rxe/routing.sh
source test/rxe/guest-lib.sh
rxe_mxl_scenario scale
HERE=test/rxe/scale
W=/tmp/scale-run
A_ID=5fbec3b1-1b0f-417d-9059-8b94a4710001
A_FLOW=test/rxe/mxl/flows/video.json
# config.yaml's window and a little: the mxl phase's scrape is of a window that lies wholly in it.
WINDOW=${SCALE_WINDOW_SECONDS:-62}
# How long a phase settles before the exporter's CPU is read, and for how long it is read.
SETTLE=${SCALE_SETTLE_SECONDS:-10}
CPU_SECONDS=${SCALE_CPU_SECONDS:-20}
QPS=${SCALE_QPS:-256}
trap 'rxe_stop_started; rxe_route_down 192.168.77.1 192.168.77.2' EXIT

scrape() { rxe_http_get 9842 /metrics "$RXE_OUT/metrics-$1.txt" 2>/dev/null; }

# utime + stime of a process, in clock ticks (proc(5) fields 14 and 15), with builtins only.
cpu_ticks() {
  local s
  read -r s <"/proc/$1/stat"
  s=${s##*) }
  # shellcheck disable=SC2086
  set -- $s
  echo $((${12} + ${13}))
}

# The exporter's CPU over CPU_SECONDS after SETTLE: OUT/cpu-PHASE.txt "ticks seconds".
cpu_phase() { # cpu_phase PHASE EXPORTER_PID
  local t0 t1 a b
  sleep "$SETTLE"
  t0=$EPOCHREALTIME a=$(cpu_ticks "$2")
  sleep "$CPU_SECONDS"
  t1=$EPOCHREALTIME b=$(cpu_ticks "$2")
  echo "$((b - a)) $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" >"$RXE_OUT/cpu-$1.txt"
  rxe_event "$1: exporter CPU $((b - a)) ticks over $CPU_SECONDS s"
}

bound_both() { # bound_both EXPORTER_PID: flow A measured by its connections on rxe0 tx and rxe1 rx
  kill -0 "$1" 2>/dev/null || return 2
  scrape wait || return 1
  local f=$RXE_OUT/metrics-wait.txt
  grep -q "^mxl_fabric_flow_measured_packets_per_second{flow_id=\"$A_ID\",device=\"rxe0\",port=\"1\",direction=\"tx\"" "$f" &&
    grep -q "^mxl_fabric_flow_measured_packets_per_second{flow_id=\"$A_ID\",device=\"rxe1\",port=\"1\",direction=\"rx\"" "$f"
}

qp_count() { rdma res show qp 2>/dev/null | grep -c . || true; }

perftest_up() { # perftest_up WANT: the kernel holds at least WANT QPs
  (($(qp_count) >= $1))
}

# The kernel's table and dumps of a phase: OUT/rdma-qp-PHASE.txt, OUT/dumps-PHASE/.
record() {
  rdma res show qp >"$RXE_OUT/rdma-qp-$1.txt" 2>&1 || true
  node test/rxe/capture-restrack.mjs "$RXE_OUT/dumps-$1" >"$RXE_OUT/capture-$1.txt" 2>&1 || rxe_fail "$1: capture-restrack failed"
}

main() {
  [[ -x $P/bin/mxl-fabrics-demo ]] || { rxe_fail "no MXL fabrics build in $P (shared/mxl/build.sh --fabrics)"; exit 1; }
  [[ -s $GST_REGISTRY ]] || { rxe_fail "no GStreamer registry at $GST_REGISTRY (run.sh builds it on the host)"; exit 1; }
  command -v ib_write_bw >/dev/null || { rxe_fail "ib_write_bw (perftest) is not installed on the host"; exit 1; }
  [[ $(getconf CLK_TCK) == 100 ]] || { rxe_fail "CLK_TCK is $(getconf CLK_TCK), check.mjs reads ticks as 1/100 s"; exit 1; }
  mkdir -p "$TX" "$RX" "$W"
  local d
  for d in "$TX" "$RX"; do echo '{ "urn:x-mxl:option:history_duration/v1.0": 1000000000 }' >"$d/options.json"; done
  rxe_route_up 192.168.77.1 192.168.77.2 || { rxe_fail "policy routing: 192.168.77.2 not via veth0"; exit 1; }
  node dist/cli/main.js serve --config.file "$HERE/config.yaml" --web.listen-address 127.0.0.1:9842 --log.format json \
    >"$RXE_OUT/exporter.log" 2>&1 &
  local exporter=$!
  rxe_started "$exporter"
  rxe_wait_for 60 rxe_exporter_ready 9842 "$exporter" || { rxe_fail "idle: the exporter did not become ready"; exit 1; }
  rxe_event "idle: exporter up"
  cpu_phase idle "$exporter"
  scrape idle || rxe_fail "idle: scrape"

  local g0 g1 hold=$((SETTLE + CPU_SECONDS + 120 + WINDOW + 60))
  g0=$(gid_index rxe0) g1=$(gid_index rxe1)
  nice -n 19 ib_write_bw -d rxe1 -x "$g1" -q "$QPS" -s 4096 -n 5 -F -p 18516 --wait_destroy="$hold" \
    >"$RXE_OUT/perftest-server.log" 2>&1 &
  rxe_started $!
  sleep 2
  nice -n 19 ib_write_bw -d rxe0 -x "$g0" -q "$QPS" -s 4096 -n 5 -F -p 18516 --wait_destroy="$hold" 192.168.77.2 \
    >"$RXE_OUT/perftest-client.log" 2>&1 &
  rxe_started $!
  rxe_wait_for 120 perftest_up $((2 * QPS + 2)) || rxe_fail "qps: the kernel holds $(qp_count) QPs, not $((2 * QPS + 2))"
  rxe_event "qps: the kernel holds $(qp_count) QPs"
  cpu_phase qps "$exporter"
  scrape qps || rxe_fail "qps: scrape"
  record qps
  rxe_event "qps: scraped"

  "$P/bin/mxl-gst-testsrc" -d "$TX" -p black -v "$A_FLOW" >"$RXE_OUT/a-testsrc.log" 2>&1 &
  rxe_started $!
  rxe_wait_for 60 test -e "$TX/$A_ID.mxl-flow/data" || { rxe_fail "mxl-gst-testsrc created no flow"; exit 1; }
  "$P/bin/mxl-fabrics-demo" -d "$RX" -p verbs -n 192.168.77.2 -s 1312 -f "$A_FLOW" -t "@$W/a.target" \
    >"$RXE_OUT/a-target.log" 2>&1 &
  rxe_started $!
  rxe_wait_for 60 test -s "$W/a.target" || { rxe_fail "the fabrics target wrote no target info"; exit 1; }
  LD_LIBRARY_PATH="$P/lib-rw" "$P/bin/mxl-fabrics-demo" -i -d "$TX" -p verbs -n 192.168.77.1 \
    -f "$A_ID" -t "@$W/a.target" >"$RXE_OUT/a-initiator.log" 2>&1 &
  rxe_started $!
  rxe_wait_for 120 bound_both "$exporter" || { rxe_fail "mxl: the exporter did not measure flow A by its connections"; exit 1; }
  rxe_event "mxl: flow A measured"
  sleep $((WINDOW - CPU_SECONDS))
  local t0 a
  t0=$EPOCHREALTIME a=$(cpu_ticks "$exporter")
  sleep "$CPU_SECONDS"
  echo "$(($(cpu_ticks "$exporter") - a)) $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')" >"$RXE_OUT/cpu-mxl.txt"
  scrape mxl || rxe_fail "mxl: scrape"
  rdma res show qp >"$RXE_OUT/rdma-qp-mxl.txt" 2>&1 || true
  rxe_event "mxl: scraped"

  node "$HERE/check.mjs" "$RXE_OUT" || rxe_fail "scale checks failed (see $RXE_OUT/scale-report.json)"
  [[ ! -s $RXE_OUT/guest-failures.txt ]]
}

# GID index of the device's IPv4-mapped RoCE v2 GID (smoke.sh's rule: the table order is not fixed).
gid_index() {
  local dir=/sys/class/infiniband/$1/ports/1 t i
  for t in "$dir"/gid_attrs/types/*; do
    i=${t##*/}
    [[ $(cat "$t" 2>/dev/null) == "RoCE v2" ]] || continue
    [[ $(cat "$dir/gids/$i") == 0000:0000:0000:0000:0000:ffff:* ]] || continue
    echo "$i"
    return 0
  done
  return 1
}

main "$@"
