#!/usr/bin/env bash
# Runs inside the soft-RoCE guest (test/rxe/run.sh, scenario "flows"): two exporters, one per
# "host" (sender.yaml on rxe0 at :9842; receiver.yaml on rxe1 at :9843, from phase B), and the
# phases the host side (host.mjs) checks with a real Prometheus. Each phase starts with a marker
# file in $RXE_OUT (phase-NAME) and waits for the host's ack-NAME before the next one.
#
#   A  three flows on rxe0 (mxl-loadgen, one sender per flow, and an MXL-like writer per flow in
#      /dev/shm/flows-tx): a-run, a-data-stopped (data's writer and sender only), a-all-stopped,
#      a-restarted.
#   B  real MXL: mxl-gst-testsrc writes video + audio into /dev/shm/mxl-tx; mxl-fabrics-demo's
#      target re-creates the video in /dev/shm/mxl-rx on rxe1 and its initiator sends it from
#      rxe0: b-run, b-initiator-stopped, b-target-stopped.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
: "${RXE_OUT:?RXE_OUT is set by guest.sh}"
source test/rxe/guest-lib.sh
RXE_SCENARIO=flows
HERE=test/rxe/flows
source test/rxe/routing.sh
LOADGEN=native/build/mxl-loadgen
WRITER=test/domain/writer.mjs
MXL=${MXL_PREFIX:-/opt/mxl}
SRC=192.168.77.1
DST=192.168.77.2
ACK_TIMEOUT=180
# Built on the host by test/rxe/mxl/prepare.sh: the guest cannot write to the host root.
export GST_REGISTRY=$RXE_OUT/gst-registry.bin GST_REGISTRY_UPDATE=no

cli() { node dist/cli/main.js "$@"; }

policy_routing() {
  rxe_route_up $SRC $DST || rxe_fail "policy routing: $DST from $SRC does not leave on veth0"
}
unroute() { rxe_route_down $SRC $DST; }

declare -A WRITERS SENDERS
start_flow() { # start_flow NAME: the flow's writer (domain entry), then its sender (wire)
  local name=$1
  node $WRITER --paced /dev/shm/flows-tx $HERE/flows/$name.json 10 >"$RXE_OUT/writer-$name.out" 2>"$RXE_OUT/writer-$name.err" &
  WRITERS[$name]=$!
  $LOADGEN send --connect $DST:7480 --source $SRC --flows-json "$RXE_OUT/loadgen-$name.json" --duration 900 --json \
    >>"$RXE_OUT/send-$name.json" 2>>"$RXE_OUT/send-$name.err" &
  SENDERS[$name]=$!
}
stop_flow() { # stop_flow NAME: a clean stop, as an MXL sender exits (its writer deletes the flow)
  local name=$1
  kill -TERM "${SENDERS[$name]}" "${WRITERS[$name]}" 2>/dev/null || true
  wait "${SENDERS[$name]}" 2>/dev/null || true
  wait "${WRITERS[$name]}" 2>/dev/null || true
}

phase_a() {
  local f
  for f in video audio data; do
    cli calc --provider rdma_rocev2 --ib-mtu 4096 --output json $HERE/flows/$f.json >"$RXE_OUT/loadgen-$f.json"
  done
  mkdir -p /dev/shm/flows-tx
  $LOADGEN serve --bind $DST:7480 --json >"$RXE_OUT/serve.json" 2>"$RXE_OUT/serve.err" &
  SERVE=$!
  sleep 1
  for f in video audio data; do start_flow $f; done
  rxe_mark a-run; rxe_wait_ack a-run "$ACK_TIMEOUT" || return 1
  stop_flow data
  rxe_mark a-data-stopped; rxe_wait_ack a-data-stopped "$ACK_TIMEOUT" || return 1
  stop_flow video
  stop_flow audio
  rxe_mark a-all-stopped; rxe_wait_ack a-all-stopped "$ACK_TIMEOUT" || return 1
  for f in video audio data; do start_flow $f; done
  rxe_mark a-restarted; rxe_wait_ack a-restarted "$ACK_TIMEOUT" || return 1
  for f in video audio data; do stop_flow $f; done
  kill -TERM "$SERVE" 2>/dev/null || true
  wait "$SERVE" 2>/dev/null || true
}

phase_b() {
  local video audio id
  video=$HERE/flows/mxl-video.json
  audio=$HERE/flows/mxl-audio.json
  id=$(node -p "require('./$video').id")
  mkdir -p /dev/shm/mxl-tx /dev/shm/mxl-rx
  "$MXL/bin/mxl-gst-testsrc" -d /dev/shm/mxl-tx -v $video -a $audio >"$RXE_OUT/testsrc.log" 2>&1 &
  local testsrc=$!
  "$MXL/bin/mxl-fabrics-demo" -d /dev/shm/mxl-rx -p verbs -n $DST -s 1312 -f $video -t @/tmp/target.json >"$RXE_OUT/target.log" 2>&1 &
  local target=$!
  local i
  for i in $(seq 240); do [[ -s /tmp/target.json && -d /dev/shm/mxl-tx/$id.mxl-flow ]] && break; sleep 0.25; done
  [[ -s /tmp/target.json ]] || { rxe_fail "mxl-fabrics-demo target wrote no target info: $(tail -n 3 "$RXE_OUT/target.log")"; return 1; }
  [[ -d /dev/shm/mxl-tx/$id.mxl-flow ]] || { rxe_fail "mxl-gst-testsrc created no flow: $(tail -n 3 "$RXE_OUT/testsrc.log")"; return 1; }
  LD_LIBRARY_PATH="$MXL/lib-rw" "$MXL/bin/mxl-fabrics-demo" -i -d /dev/shm/mxl-tx -p verbs -n $SRC -f "$id" -t @/tmp/target.json \
    >"$RXE_OUT/initiator.log" 2>&1 &
  local initiator=$!
  rxe_mark b-run; rxe_wait_ack b-run "$ACK_TIMEOUT" || return 1
  kill -INT "$initiator" 2>/dev/null || true
  wait "$initiator" 2>/dev/null || true
  rxe_mark b-initiator-stopped; rxe_wait_ack b-initiator-stopped "$ACK_TIMEOUT" || return 1
  kill -INT "$target" 2>/dev/null || true
  wait "$target" 2>/dev/null || true
  rxe_mark b-target-stopped; rxe_wait_ack b-target-stopped "$ACK_TIMEOUT" || return 1
  kill -INT "$testsrc" 2>/dev/null || true
  wait "$testsrc" 2>/dev/null || true
}

main() {
  [[ -x $LOADGEN ]] || { rxe_fail "no $LOADGEN: build it on the host (npm run build:native)"; exit 1; }
  ulimit -l unlimited 2>/dev/null || true
  trap unroute EXIT
  policy_routing
  cli serve --config.file $HERE/sender.yaml --web.listen-address :9842 --log.format json >"$RXE_OUT/exporter-sender.log" 2>&1 &
  local sender=$!
  rxe_wait_for 120 rxe_exporter_ready 9842 "$sender" || { rxe_fail "sender exporter not ready"; exit 1; }
  rxe_mark ready
  phase_a || rxe_fail "phase A did not finish"
  # The receiving host's exporter joins for phase B only: two vCPUs under emulation are scarce.
  cli serve --config.file $HERE/receiver.yaml --web.listen-address :9843 --log.format json >"$RXE_OUT/exporter-receiver.log" 2>&1 &
  local receiver=$!
  rxe_wait_for 120 rxe_exporter_ready 9843 "$receiver" || { rxe_fail "receiver exporter not ready"; exit 1; }
  phase_b || rxe_fail "phase B did not finish"
  rxe_mark done
  rxe_wait_host_done 60 || true
  kill "$sender" "$receiver" 2>/dev/null || true
  wait "$sender" "$receiver" 2>/dev/null || true
  [[ ! -s $RXE_OUT/guest-failures.txt ]]
}

main "$@"
