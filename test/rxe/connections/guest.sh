#!/usr/bin/env bash
# Runs inside the soft-RoCE guest (test/rxe/run.sh, scenario "connections"): per-connection truth
# with real MXL. Two flows of different sizes (A 320x180p25, B 256x144p29.97), each its own
# mxl-gst-testsrc writer, fabrics target on rxe1 and initiator process on rxe0; one exporter with
# bind: auto on both domains (auto.yaml) scraped through the phases:
#   two        both flows: bindings, packets per grain against the model, coverage
#   perftest   + `ib_write_bw -R` from rxe0 to rxe1 (niced): a connection without a flow
#   stop       flow A's initiator stopped: its connection goes, scraped every 0.25 s
#   restart    flow A's initiator started again: bound again, no negative rate
#   wrong      `check` and a second exporter with flow B bound by config to rxe0 rx (wrong.yaml)
# check.mjs judges the saved scrapes (OUT/connections-report.json). Timeline: OUT/events.txt.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
: "${RXE_OUT:?RXE_OUT is set by guest.sh}"
HERE=test/rxe/connections
source test/rxe/routing.sh
source test/rxe/guest-lib.sh
P=${MXL_PREFIX:-/opt/mxl}
TX=/dev/shm/mxl-tx
RX=/dev/shm/mxl-rx
W=/tmp/connections-run
A_ID=5fbec3b1-1b0f-417d-9059-8b94a4710001
B_ID=5fbec3b1-1b0f-417d-9059-8b94a4710002
A_FLOW=test/rxe/mxl/flows/video.json
B_FLOW=$HERE/flows/video-b.json
# The window of auto.yaml and a little: the two-flow read spans a full window; the perftest read
# half of one, perftest running all of that half.
WINDOW=${CONNECTIONS_WINDOW_SECONDS:-62}
HALF=$((WINDOW / 2))
export GST_REGISTRY=$RXE_OUT/gst-registry.bin GST_REGISTRY_UPDATE=no

log() { echo "connections-guest: $*" >&2; }
fail() { log "FAIL: $*"; echo "$*" >>"$RXE_OUT/guest-failures.txt"; }
event() { echo "$EPOCHREALTIME $*" >>"$RXE_OUT/events.txt"; log "$*"; }
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  sleep 1
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  ip rule del pref 11 iif lo to 192.168.77.2 lookup 100 2>/dev/null || true
  rxe_route_down 192.168.77.1 192.168.77.2
}
trap cleanup EXIT

scrape() { # scrape NAME [PORT]: the exporter's metrics into OUT/metrics-NAME.txt
  rxe_http_get "${2:-9842}" /metrics "$RXE_OUT/metrics-$1.txt" 2>/dev/null
}

has() { # has NAME PATTERN...: the last scrape NAME holds a line starting with each pattern
  local f=$RXE_OUT/metrics-$1.txt p
  shift
  for p in "$@"; do grep -q "^$p" "$f" || return 1; done
}

exporter_up() { # exporter_up PID: 2 (stop waiting) when it exited
  kill -0 "$1" 2>/dev/null || return 2
}

# Flow NAME's writer and target (service port SERVICE) on rxe1; the initiator is started apart.
endpoints() { # endpoints NAME FLOW_JSON FLOW_ID SERVICE
  local name=$1 flow=$2 id=$3 service=$4
  "$P/bin/mxl-gst-testsrc" -d "$TX" -p black -v "$flow" >"$RXE_OUT/$name-testsrc.log" 2>&1 &
  pids+=($!)
  rxe_wait_for 60 test -e "$TX/$id.mxl-flow/data" || { fail "$name: mxl-gst-testsrc created no flow"; return 1; }
  "$P/bin/mxl-fabrics-demo" -d "$RX" -p verbs -n 192.168.77.2 -s "$service" -f "$flow" -t "@$W/$name.target" \
    >"$RXE_OUT/$name-target.log" 2>&1 &
  pids+=($!)
  rxe_wait_for 60 test -s "$W/$name.target" || { fail "$name: the fabrics target wrote no target info"; return 1; }
}

initiator() { # initiator NAME FLOW_ID LOG_SUFFIX: sets INITIATOR to its pid
  LD_LIBRARY_PATH="$P/lib-rw" "$P/bin/mxl-fabrics-demo" -i -d "$TX" -p verbs -n 192.168.77.1 \
    -f "$2" -t "@$W/$1.target" >"$RXE_OUT/$1-initiator$3.log" 2>&1 &
  INITIATOR=$!
  pids+=("$INITIATOR")
}

bound_both() { # bound_both EXPORTER_PID FLOW_ID...: every flow measured by its connections on rxe0 tx and rxe1 rx
  exporter_up "$1" || return 2
  local pid=$1 id
  shift
  scrape wait || return 1
  for id in "$@"; do
    has wait "mxl_fabric_flow_measured_packets_per_second{flow_id=\"$id\",device=\"rxe0\",port=\"1\",direction=\"tx\"" \
      "mxl_fabric_flow_measured_packets_per_second{flow_id=\"$id\",device=\"rxe1\",port=\"1\",direction=\"rx\"" || return 1
  done
}

perftest_listening() { # perftest_listening SERVER_PID: its RDMA CM listener on port 18515 is in the kernel's table
  kill -0 "$1" 2>/dev/null || return 2
  rdma res show cm_id 2>/dev/null | grep -q 'state LISTEN .*:18515\b'
}

perftest() { # perftest SECONDS: ib_write_bw over RDMA CM (-R) from rxe0 to rxe1, niced under MXL
  nice -n 19 ib_write_bw -R -d rxe1 -s 4096 -D "$1" -p 18515 >"$RXE_OUT/perftest-server.log" 2>&1 &
  local server=$!
  pids+=("$server")
  # A client that comes before the server's listener is rejected (RDMA_CM_EVENT_REJECTED, status
  # 8: no listener on that service ID): seen once with a fixed 2 s wait, niced under MXL in TCG.
  rxe_wait_for 30 perftest_listening "$server" || fail "perftest: the server did not listen on 18515 within 30 s"
  rdma res show cm_id >"$RXE_OUT/perftest-cm-ids.txt" 2>&1 || true
  # perftest's RDMA CM client binds no source address (its --source_ip did not change that here):
  # the route to 192.168.77.2 from no address is the local one, and both ends would be on rxe1.
  # While it runs, such traffic takes table 100 (veth0, from 192.168.77.1), as rxe_route_up's
  # rules do for traffic from 192.168.77.1.
  ip rule add pref 11 iif lo to 192.168.77.2 lookup 100
  ip route get 192.168.77.2 | grep -q 'dev veth0' || fail "perftest: 192.168.77.2 is not reached via veth0: $(ip route get 192.168.77.2)"
  nice -n 19 ib_write_bw -R -d rxe0 -s 4096 -D "$1" -p 18515 192.168.77.2 >"$RXE_OUT/perftest-client.log" 2>&1 &
  PERFTEST=$!
  pids+=("$PERFTEST")
}

# Flow A's initiator stopped: scrapes every 0.25 s from before its exit until its connection is
# down (connection_up 0, or gone), for check.mjs (each read after the exit shows it down) and the promtool test of
# MxlFabricConnectionDown on the series as exported.
stop_a() {
  local i=0 n
  local asked=$EPOCHREALTIME
  scrape "stop-000" && echo "$asked stop-000" >>"$RXE_OUT/scrapes.txt"
  event "stop-signal A"
  kill -INT "$A_INITIATOR"
  wait "$A_INITIATOR" 2>/dev/null || true
  event "stop-exited A"
  for ((n = 1; n <= 40; n++)); do
    sleep 0.25
    printf -v i '%03d' "$n"
    # The time asked: what the scrape shows was read at a tick before it.
    local asked=$EPOCHREALTIME
    scrape "stop-$i" || continue
    echo "$asked stop-$i" >>"$RXE_OUT/scrapes.txt"
    grep -q "^mxl_fabric_connection_up{device=\"rxe0\",port=\"1\",local=\"$A_LOCAL\",.* 0$" "$RXE_OUT/metrics-stop-$i.txt" && break
  done
  event "stop-down-seen A (scrape stop-$i)"
}

main() {
  [[ -x $P/bin/mxl-fabrics-demo ]] || { fail "no MXL fabrics build in $P (shared/mxl/build.sh --fabrics)"; exit 1; }
  [[ -s $GST_REGISTRY ]] || { fail "no GStreamer registry at $GST_REGISTRY (run.sh builds it on the host)"; exit 1; }
  command -v ib_write_bw >/dev/null || { fail "ib_write_bw (perftest) is not installed on the host"; exit 1; }
  mkdir -p "$TX" "$RX" "$W"
  # One second of history in both domains (MXL's domain options.json, lib/internal/src/Instance.cpp;
  # the default is 200 ms, 5 grains): an initiator that TCG stalls for less than that catches up
  # instead of jumping to the newest grain (demo.cpp, MXL_ERR_OUT_OF_RANGE_TOO_LATE), so that the
  # receiving domain's headIndex counts grains that arrived.
  local d
  for d in "$TX" "$RX"; do echo '{ "urn:x-mxl:option:history_duration/v1.0": 1000000000 }' >"$d/options.json"; done
  rxe_route_up 192.168.77.1 192.168.77.2 || { fail "policy routing: 192.168.77.2 not via veth0"; exit 1; }
  endpoints a "$A_FLOW" "$A_ID" 1312
  endpoints b "$B_FLOW" "$B_ID" 1314
  node dist/cli/main.js serve --config.file "$HERE/auto.yaml" --web.listen-address 127.0.0.1:9842 --log.format json \
    >"$RXE_OUT/exporter.log" 2>&1 &
  local exporter=$!
  pids+=("$exporter")
  initiator a "$A_ID" ""
  A_INITIATOR=$INITIATOR
  initiator b "$B_ID" ""
  rxe_wait_for 120 bound_both "$exporter" "$A_ID" "$B_ID" || { fail "two: the exporter did not measure both flows by their connections"; exit 1; }
  event "two: both flows measured"
  sleep "$WINDOW"
  scrape two || fail "two: scrape"
  event "two: scraped"
  # The local address of A's connection, for the stop phase.
  A_LOCAL=$(sed -n "s/^mxl_fabric_connection_info{device=\"rxe0\",port=\"1\",local=\"\([^\"]*\)\".*flow_id=\"$A_ID\"} 1$/\1/p" "$RXE_OUT/metrics-two.txt" | head -n 1)
  [[ -n $A_LOCAL ]] || { fail "two: no connection on rxe0 carries flow A"; exit 1; }

  perftest $((HALF + 4))
  event "perftest: started"
  sleep "$HALF"
  scrape perftest || fail "perftest: scrape"
  event "perftest: scraped"
  wait "$PERFTEST" 2>/dev/null || true
  ip rule del pref 11 iif lo to 192.168.77.2 lookup 100
  event "perftest: ended"

  local relistened
  relistened=$(grep -c 'Transitioning to listening' "$RXE_OUT/a-target.log" || true)
  stop_a
  # MXL's target listens again only once it has read the old connection's shutdown
  # (RCTarget.cpp: Connected -> WaitForConnectionRequest, a new passive endpoint); a connection
  # request before that finds no listener, is rejected, and MXL's initiator does not try again.
  target_listens() { (($(grep -c 'Transitioning to listening' "$RXE_OUT/a-target.log" || true) > relistened)); }
  rxe_wait_for 30 target_listens || fail "restart: flow A's target did not listen again within 30 s of its initiator's exit"
  event "restart: A's target listens again"
  initiator a "$A_ID" "-2"
  A_INITIATOR=$INITIATOR
  event "restart-started A"
  if ! rxe_wait_for 90 bound_both "$exporter" "$A_ID"; then
    # What the kernel and MXL showed then: a QP missing (MXL did not reconnect) or not joined.
    rdma res show qp >"$RXE_OUT/restart-qps.txt" 2>&1 || true
    rdma res show cm_id >"$RXE_OUT/restart-cm-ids.txt" 2>&1 || true
    exporter_up "$exporter" && why="exporter running" || why="exporter exited"
    fail "restart: flow A was not measured by its connections again ($why; initiator: $(grep -v 'demo.cpp:85' "$RXE_OUT/a-initiator-2.log" | tail -n 2 | tr '\n' ' '); $(grep -c 'lqpn' "$RXE_OUT/restart-qps.txt") QPs in the kernel)"
  fi
  event "restart-measured A"
  local n
  for n in 1 2 3 4; do sleep 1; scrape "restart-$n" || true; done
  event "restart: scraped"

  node dist/cli/main.js check --config.file "$HERE/wrong.yaml" >"$RXE_OUT/check-wrong.txt" 2>&1 && echo 0 >"$RXE_OUT/check-wrong.rc" || echo $? >"$RXE_OUT/check-wrong.rc"
  event "wrong: check exit $(cat "$RXE_OUT/check-wrong.rc")"
  node dist/cli/main.js serve --config.file "$HERE/wrong.yaml" --web.listen-address 127.0.0.1:9843 --log.format json \
    >"$RXE_OUT/exporter-wrong.log" 2>&1 &
  local wrong=$!
  pids+=("$wrong")
  mismatch() { exporter_up "$wrong" || return 2; scrape wrong 9843 && has wrong "mxl_fabric_flow_binding_mismatch{flow_id=\"$B_ID\""; }
  rxe_wait_for 60 mismatch || log "wrong: no flow_binding_mismatch yet (check.mjs says what the scrape holds)"
  event "wrong: scraped"

  node "$HERE/check.mjs" "$RXE_OUT" || fail "connections checks failed (see $RXE_OUT/connections-report.json)"
  [[ ! -s $RXE_OUT/guest-failures.txt ]]
}

main "$@"
