#!/usr/bin/env bash
# Runs inside the soft-RoCE guest (test/rxe/run.sh): the exporter on the real rxe0/rxe1,
# MXL-shaped traffic from native/mxl-loadgen, checks of the native sources. The host side
# (scenario-host.mjs) scrapes the exporter with a real Prometheus through qemu's hostfwd and
# follows the phases through marker files in $RXE_OUT.
#
# Timeline: phase A, the known flows start; after 30 s, phase B: a flow the config does not know
# joins; both run until the host side has seen the drift alert fire (ack-b: up to its deadline,
# so that a guest slowed down by a busy host is waited for, not failed); then idle checks.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
: "${RXE_OUT:?RXE_OUT is set by guest.sh}"
source test/rxe/guest-lib.sh
RXE_SCENARIO=scenario
SCENARIO=test/rxe/scenario
LOADGEN=native/build/mxl-loadgen
PHASE_B_AFTER=30
# An upper bound only: the senders stop once the host side acknowledges phase B.
SEND_SECONDS=900
ACK_TIMEOUT=300

cli() { node dist/cli/main.js "$@"; }

calc_flows() { # calc_flows OUT FLOW... -> the model's writes per grain, for the load generator
  local out=$1; shift
  cli calc --provider rdma_rocev2_mxl_v1 --ib-mtu 4096 --output json "$@" >"$out"
}

# Native sources against the real kernel: libibverbs attributes, netlink = sysfs when idle.
check_native() { # check_native LABEL
  node dist/sources/probe.js >"$RXE_OUT/probe-$1.json"
  node test/rxe/check-native.mjs "$RXE_OUT/probe-$1.json" /sys >"$RXE_OUT/native-$1.txt" 2>&1 ||
    rxe_fail "native check $1: $(tail -n 3 "$RXE_OUT/native-$1.txt")"
  cat "$RXE_OUT/native-$1.txt" >&2
}

main() {
  [[ -x $LOADGEN ]] || { rxe_fail "no $LOADGEN: build it on the host (npm run build:native)"; exit 1; }
  ulimit -l unlimited 2>/dev/null || true
  calc_flows "$RXE_OUT/known.json" $SCENARIO/flows/{video,audio,data}.json
  calc_flows "$RXE_OUT/unknown.json" $SCENARIO/flows/unknown-video.json
  cli devices --output json >"$RXE_OUT/devices.json"
  check_native before

  # node itself in the background (not the cli function, whose subshell would get the kill)
  node dist/cli/main.js serve --config.file $SCENARIO/config.yaml --web.listen-address :9842 --log.format json \
    >"$RXE_OUT/exporter.log" 2>&1 &
  local exporter=$!
  rxe_wait_for 120 rxe_exporter_ready 9842 "$exporter" || { rxe_fail "exporter not ready"; exit 1; }
  rxe_mark ready

  $LOADGEN serve --bind 192.168.77.2:7472 --until-disconnect --json >"$RXE_OUT/serve-a.json" 2>"$RXE_OUT/serve-a.err" &
  $LOADGEN serve --bind 192.168.77.2:7473 --until-disconnect --json >"$RXE_OUT/serve-b.json" 2>"$RXE_OUT/serve-b.err" &
  sleep 1
  rxe_mark a
  $LOADGEN send --connect 192.168.77.2:7472 --source 192.168.77.1 --flows-json "$RXE_OUT/known.json" \
    --duration $SEND_SECONDS --json >"$RXE_OUT/send-a.json" 2>"$RXE_OUT/send-a.err" &
  local send_a=$!
  sleep $PHASE_B_AFTER
  rxe_mark b
  $LOADGEN send --connect 192.168.77.2:7473 --source 192.168.77.1 --flows-json "$RXE_OUT/unknown.json" \
    --duration $SEND_SECONDS --json >"$RXE_OUT/send-b.json" 2>"$RXE_OUT/send-b.err" &
  local send_b=$!
  rxe_wait_ack b "$ACK_TIMEOUT" || true
  kill -INT "$send_a" "$send_b" 2>/dev/null || true
  wait $send_a || rxe_fail "known-flow sender failed: $(tail -n 2 "$RXE_OUT/send-a.err")"
  wait $send_b || rxe_fail "unknown-flow sender failed: $(tail -n 2 "$RXE_OUT/send-b.err")"
  rxe_mark idle
  sleep 2
  check_native after

  rxe_wait_host_done 60 || true
  kill "$exporter" 2>/dev/null || true
  wait "$exporter" 2>/dev/null || true
  [[ ! -s $RXE_OUT/guest-failures.txt ]]
}

main "$@"
