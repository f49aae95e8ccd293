#!/usr/bin/env bash
# Runs inside the soft-RoCE guest (test/rxe/run.sh, scenario "mxl"): real MXL from rxe0 to rxe1.
# Per phase (a 320x180p25 v210 flow, then an 8-channel 48 kHz audio flow): mxl-gst-testsrc
# writes the flow into the sender's domain, mxl-fabrics-demo (libfabric verbs, RC) carries it to
# a target on rxe1, the exporter (watching both domains, both ports) gives its predictions for
# that exact flow, and the kernel's counters are snapshotted around the transfer. check.mjs
# then compares the two.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
: "${RXE_OUT:?RXE_OUT is set by guest.sh}"
HERE=test/rxe/mxl
source test/rxe/routing.sh
source test/rxe/guest-lib.sh
P=${MXL_PREFIX:-/opt/mxl}
TX=/dev/shm/mxl-tx
RX=/dev/shm/mxl-rx
W=/tmp/mxl-run
VIDEO_ID=5fbec3b1-1b0f-417d-9059-8b94a4710001
AUDIO_ID=b3bb5be7-9fe9-4324-a5bb-4c70e1080008
SETTLE=${MXL_SETTLE_SECONDS:-6}
export GST_REGISTRY=$RXE_OUT/gst-registry.bin GST_REGISTRY_UPDATE=no

log() { echo "mxl-guest: $*" >&2; }
fail() { log "FAIL: $*"; echo "$*" >>"$RXE_OUT/guest-failures.txt"; }
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  sleep 1
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  rxe_route_down 192.168.77.1 192.168.77.2
}
trap cleanup EXIT

route() {
  rxe_route_up 192.168.77.1 192.168.77.2 || { fail "policy routing: 192.168.77.2 not via veth0"; return 1; }
}

# The kernel's counters for both ports, as JSON, read with shell builtins only: a fork costs
# tens of milliseconds under TCG and the counters move while they are read. Each veth's statistics
# are read right after its rxe device's sent_pkts, because check.mjs compares the two: read with
# every hw counter of both devices in between, a starved guest (two guests on the host's two
# cores) once gave veth0 tx bytes 1.2 % below the model while rxe0's packets were 0.3 % below, the
# skew of 0.1 s between the two reads in a 10.6 s window.
snapshot() { # snapshot NAME
  local f c v n out="{\"t\":$EPOCHREALTIME"
  for n in 0 1; do
    for f in /sys/class/infiniband/rxe$n/ports/1/hw_counters/*; do
      c=${f##*/}
      [[ $c == lifespan ]] && continue
      read -r v <"$f"
      out+=",\"rxe$n.$c\":$v"
      [[ $c == sent_pkts ]] || continue
      for f in /sys/class/net/veth$n/statistics/{tx,rx}_{bytes,packets}; do
        read -r v <"$f"
        out+=",\"veth$n.${f##*/}\":$v"
      done
    done
  done
  printf '%s}\n' "$out" >"$RXE_OUT/counters-$1.json"
}

http_get() { rxe_http_get 9842 "$@"; } # http_get PATH FILE
wait_for() { rxe_wait_for "$@"; }

# The exporter's predictions once both domains hold the flow (the sender's copy from the
# writer, the receiver's from the fabrics target): saved, then the exporter stops, so that
# the measurement window has the guest's two emulated CPUs to itself.
predictions() { # predictions NAME FLOW_ID
  local name=$1 id=$2 out="$RXE_OUT/metrics-$1.txt"
  node dist/cli/main.js serve --config.file "$HERE/config.yaml" --web.listen-address 127.0.0.1:9842 --log.format json \
    >"$RXE_OUT/exporter-$name.log" 2>&1 &
  local exporter=$!
  has_both() {
    kill -0 "$exporter" 2>/dev/null || { fail "$name: the exporter exited: $(tail -n 1 "$RXE_OUT/exporter-$name.log")"; return 2; }
    http_get /metrics "$out" 2>/dev/null &&
      grep -q "^mxl_fabric_flow_predicted_packets_per_second{flow_id=\"$id\",device=\"rxe0\"" "$out" &&
      grep -q "^mxl_fabric_flow_predicted_packets_per_second{flow_id=\"$id\",device=\"rxe1\"" "$out"
  }
  wait_for 90 has_both || fail "$name: the exporter did not predict flow $id on both ports"
  kill -TERM "$exporter" 2>/dev/null || true
  wait "$exporter" 2>/dev/null || true
}

# While the flow runs (after the compared windows): the exporter with bind: auto on both domains
# until it has bound the flow by its connections and measured it from their PSNs; its metrics are
# kept for check-connections.mjs.
connections() { # connections NAME FLOW_ID
  local name=$1 id=$2 out="$RXE_OUT/metrics-$1-auto.txt"
  node dist/cli/main.js serve --config.file "$HERE/auto.yaml" --web.listen-address 127.0.0.1:9842 --log.format json \
    >"$RXE_OUT/exporter-$name-auto.log" 2>&1 &
  local exporter=$!
  measured_both() {
    kill -0 "$exporter" 2>/dev/null || return 2
    http_get /metrics "$out" 2>/dev/null &&
      grep -q "^mxl_fabric_flow_measured_packets_per_second{flow_id=\"$id\",device=\"rxe0\",port=\"1\",direction=\"tx\"" "$out" &&
      grep -q "^mxl_fabric_flow_measured_packets_per_second{flow_id=\"$id\",device=\"rxe1\",port=\"1\",direction=\"rx\"" "$out"
  }
  wait_for 90 measured_both || log "$name: bind: auto did not measure flow $id on both sides (see metrics-$name-auto.txt)"
  sleep 3
  http_get /metrics "$out" 2>/dev/null || true
  kill -TERM "$exporter" 2>/dev/null || true
  wait "$exporter" 2>/dev/null || true
}

# One flow over fabrics: its own writer, a target on rxe1 (writing the flow into $RX), an
# initiator on rxe0 reading $TX. Counters: before the initiator, w0 after it settled, then after
# each of WINDOWS windows of SECONDS, after once it stopped.
transfer() { # transfer NAME WRITER_FLAG FLOW_JSON FLOW_ID SERVICE WINDOWS SECONDS
  local name=$1 flag=$2 flow=$3 id=$4 service=$5 windows=$6 seconds=$7
  # A black picture is the cheapest to render under TCG; v210 bytes are the same for any picture.
  "$P/bin/mxl-gst-testsrc" -d "$TX" -p black "$flag" "$flow" >"$RXE_OUT/$name-testsrc.log" 2>&1 &
  local writer=$!
  pids+=("$writer")
  wait_for 60 test -e "$TX/$id.mxl-flow/data" ||
    { fail "$name: mxl-gst-testsrc created no flow: $(tail -n 2 "$RXE_OUT/$name-testsrc.log")"; return 1; }
  "$P/bin/mxl-info" -d "$TX" -f "$id" >"$RXE_OUT/$name-flowinfo.txt" 2>&1 || true
  "$P/bin/mxl-fabrics-demo" -d "$RX" -p verbs -n 192.168.77.2 -s "$service" -f "$flow" -t "@$W/$name.target" \
    >"$RXE_OUT/$name-target.log" 2>&1 &
  local target=$!
  pids+=("$target")
  wait_for 60 test -s "$W/$name.target" || { fail "$name: the fabrics target wrote no target info"; return 1; }
  predictions "$name" "$id"
  snapshot "$name-before"
  LD_LIBRARY_PATH="$P/lib-rw" "$P/bin/mxl-fabrics-demo" -i -d "$TX" -p verbs -n 192.168.77.1 \
    -f "$id" -t "@$W/$name.target" >"$RXE_OUT/$name-initiator.log" 2>&1 &
  local initiator=$!
  pids+=("$initiator")
  sleep "$SETTLE"
  local i
  snapshot "$name-w0"
  for ((i = 1; i <= windows; i++)); do
    sleep "$seconds"
    snapshot "$name-w$i"
  done
  # The kernel's connection tables while the flow runs, recorded as fixtures (after the compared
  # windows: node's start-up under TCG would slow MXL down in them). Never fails the scenario.
  node test/rxe/capture-restrack.mjs "$RXE_OUT/restrack-$name" >"$RXE_OUT/$name-restrack.txt" 2>&1 || true
  connections "$name" "$id"
  kill -INT "$initiator" 2>/dev/null || true
  wait "$initiator" 2>/dev/null || true
  sleep 1
  snapshot "$name-after"
  kill -INT "$target" "$writer" 2>/dev/null || true
  wait "$target" "$writer" 2>/dev/null || true
  log "$name: $(grep -o '[0-9]* \(grains\|transfers\) ([0-9]* [a-z]*) | [0-9.]* [a-z]*/s' "$RXE_OUT/$name-initiator.log" | tail -n 1)"
}

main() {
  [[ -x $P/bin/mxl-fabrics-demo ]] || { fail "no MXL fabrics build in $P (shared/mxl/build.sh --fabrics)"; exit 1; }
  [[ -s $GST_REGISTRY ]] || { fail "no GStreamer registry at $GST_REGISTRY (run.sh builds it on the host)"; exit 1; }
  mkdir -p "$TX" "$RX" "$W"
  route
  # Video is compared per second, so it needs a window in which the guest kept up with 25 grains/s:
  # check.mjs takes the first of six such windows (TCG slows down when the host is busy).
  transfer video -v "$HERE/flows/video.json" "$VIDEO_ID" 1312 6 10
  # Audio is compared per batch sent, over the whole 20 s.
  transfer audio -a "$HERE/flows/audio.json" "$AUDIO_ID" 1313 1 20
  node "$HERE/check.mjs" "$RXE_OUT" || fail "checks failed (see $RXE_OUT/report.json)"
  node "$HERE/check-connections.mjs" "$RXE_OUT" || fail "connections checks failed (see $RXE_OUT/connections-report.json)"
  [[ ! -s $RXE_OUT/guest-failures.txt ]]
}

main "$@"
