#!/usr/bin/env bash
# Runs inside the soft-RoCE guest (test/rxe/run.sh, scenario "faults", issue 32): real MXL fabrics
# carrying two flows (A 320x180p10, B 256x144p14.985, each its own mxl-gst-testsrc writer, fabrics
# target on rxe1 and initiator on rxe0), one exporter per end (sender.yaml on rxe0 at :9842,
# receiver.yaml on rxe1 at :9843, bind: auto on their domain), and the injections the host side
# (host.mjs, with Prometheus, Alertmanager and the webhook) asks for:
#   the host writes OUT/cmd-N ("inject NAME", "undo NAME" or "end"); this script does it and
#   writes OUT/done-N: "ok" or "fail: why", then KEY=VALUE lines (pids and names the expected
#   pages use, expected.yml `substitutions`).
# Every process and qdisc it starts is stopped or deleted when it exits.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
: "${RXE_OUT:?RXE_OUT is set by guest.sh}"
HERE=test/rxe/faults
source test/rxe/routing.sh
source test/rxe/guest-lib.sh
rxe_mxl_scenario faults
W=/tmp/faults-run
CONF=$W/conf
A_ID=5fbec3b1-1b0f-417d-9059-8b94a4710011
B_ID=5fbec3b1-1b0f-417d-9059-8b94a4710012
# A 320x180 at 10 grains/s, B 256x144 at 15000/1001 (faults/flows): at 25 and 29.97 grains/s each
# writer took up to a whole emulated CPU (measured: 47-106 % at 25, 4 % at 10), starving the exporters.
declare -A FLOW=([a]=$HERE/flows/a.json [b]=$HERE/flows/b.json)
declare -A ID=([a]=$A_ID [b]=$B_ID)
declare -A SERVICE=([a]=1312 [b]=1314)
declare -A WRITER TARGET INITIATOR EXPORTER
# rxe's active MTU is the largest IB MTU that fits the netdev's (rxe_net.c rxe_set_mtu): 9000
# gives 4096, the MTU the exporters' configs name; mtu-lowered takes veth0 to 2000 (1024).
NETDEV_MTU=9000
LOWERED_MTU=2000
CMD_TIMEOUT=${FAULTS_CMD_TIMEOUT:-1800}

cleanup() {
  tc qdisc del dev veth0 root 2>/dev/null || true
  ip link set veth0 up 2>/dev/null || true
  ip link set veth0 mtu 1500 2>/dev/null || true
  ip link set veth1 mtu 1500 2>/dev/null || true
  local p
  for p in "${WRITER[@]}"; do kill -CONT "$p" 2>/dev/null || true; done
  if [[ -n ${DOMAIN_MODE:-} ]]; then chmod "$DOMAIN_MODE" "$TX" 2>/dev/null || true; fi
  # Before rxe0 is added back: an `rdma link delete` in flight returns once MXL lets go of it.
  rxe_stop_started
  if [[ -n ${DELETING:-} ]]; then wait "$DELETING" 2>/dev/null || true; fi
  rdma link show rxe0 >/dev/null 2>&1 || rdma link add rxe0 type rxe netdev veth0 2>/dev/null || true
  rxe_route_down 192.168.77.1 192.168.77.2
}
trap cleanup EXIT

scrape() { rxe_http_get "$1" /metrics "$W/scrape-$1.txt" 2>/dev/null; } # scrape PORT
bound() { # bound PORT DEVICE DIRECTION FLOW_ID: the exporter at PORT measures the flow by its connections there
  scrape "$1" || return 1
  grep -q "^mxl_fabric_flow_measured_packets_per_second{flow_id=\"$4\",device=\"$2\",port=\"1\",direction=\"$3\"" "$W/scrape-$1.txt"
}
bound_both() { bound 9842 rxe0 tx "$1" && bound 9843 rxe1 rx "$1"; } # bound_both FLOW_ID
# Every 2 s, not rxe_wait_for's 0.25 s: two full scrapes in the guest four times a second starve
# the emulated CPUs while MXL reconnects (the first run here: 30 s of failed scrapes, ExporterDown).
bound_within() { # bound_within SECONDS FLOW_ID
  local i
  for ((i = 0; i < $1; i += 2)); do bound_both "$2" && return 0; sleep 2; done
  return 1
}

start_writer() { # start_writer F
  "$P/bin/mxl-gst-testsrc" -d "$TX" -p black -v "${FLOW[$1]}" >>"$RXE_OUT/$1-testsrc.log" 2>&1 &
  WRITER[$1]=$!
  rxe_started "${WRITER[$1]}"
  rxe_wait_for 60 test -e "$TX/${ID[$1]}.mxl-flow/data" || { rxe_fail "$1: mxl-gst-testsrc created no flow"; return 1; }
}
listens() { # listens F N: flow F's target has said it listens more than N times
  (($(grep -c 'Transitioning to listening' "$RXE_OUT/$1-target.log" 2>/dev/null || true) > $2))
}
start_target() { # start_target F: a new target process and target info file
  rm -f "$W/$1.target"
  "$P/bin/mxl-fabrics-demo" -d "$RX" -p verbs -n 192.168.77.2 -s "${SERVICE[$1]}" -f "${FLOW[$1]}" -t "@$W/$1.target" \
    >>"$RXE_OUT/$1-target.log" 2>&1 &
  TARGET[$1]=$!
  rxe_started "${TARGET[$1]}"
  rxe_wait_for 60 test -s "$W/$1.target" || { rxe_fail "$1: the fabrics target wrote no target info"; return 1; }
}
start_initiator() { # start_initiator F: with MXL's patch-03 lib-rw (Linux 6.1, mxl/README)
  LD_LIBRARY_PATH="$P/lib-rw" "$P/bin/mxl-fabrics-demo" -i -d "$TX" -p verbs -n 192.168.77.1 \
    -f "${ID[$1]}" -t "@$W/$1.target" >>"$RXE_OUT/$1-initiator.log" 2>&1 &
  INITIATOR[$1]=$!
  rxe_started "${INITIATOR[$1]}"
}
kill_wait() { # kill_wait SIGNAL PID
  kill "-$1" "$2" 2>/dev/null || true
  wait "$2" 2>/dev/null || true
}
# Flows' connections from scratch: new targets, then new initiators (MXL's initiator does not
# reconnect, and a killed target's successor is a new endpoint: fault-facts.md). All flows at once:
# a flow's old connection pages once ConnectionDown's for: passes without a successor.
# `between`: a command run after the old endpoints stopped, before the new targets start (the link
# or device brought back: a target started while its port is down fails, "Failed to query
# interfaces").
reconnect() { # reconnect [--between COMMAND] F...
  local between=: f
  if [[ $1 == --between ]]; then between=$2; shift 2; fi
  for f in "$@"; do kill_wait KILL "${INITIATOR[$f]}"; kill_wait KILL "${TARGET[$f]}"; done
  $between || { echo "$between failed"; return 1; }
  for f in "$@"; do start_target "$f" || return 1; done
  for f in "$@"; do start_initiator "$f"; done
  for f in "$@"; do
    bound_within 120 "${ID[$f]}" || { rxe_fail "$f: not measured by its connections on both ends after reconnecting"; return 1; }
  done
}
port_active() { rdma link show "$1/1" 2>/dev/null | grep -q 'state ACTIVE'; } # port_active DEVICE
# An rxe device whose netdev was set down and up again receives nothing more (measured on Linux
# 6.1 in this guest: rxe_udp_encap_recv and rxe_rcv run for each packet, rcvd_pkts stays, RDMA CM
# connects time out) until it is created again; a hardware port comes back by itself. rxe1, whose
# veth only lost its carrier, is not touched. `rdma link delete` returns once every process has
# let go of the device (uverbs_main.c ib_uverbs_remove_one: rxe has no disassociate_ucontext): MXL's
# endpoints are stopped first (reconnect), the exporters close theirs within a tick.
recreate_rxe0() {
  timeout 60 rdma link delete rxe0 && rdma link add rxe0 type rxe netdev veth0 && rxe_wait_for 30 port_active rxe0
}
# A link down flushes the routes through it: the policy routes of rxe_route_up too (table 100's
# via veth0), and without them RDMA CM's connect never completes.
link_back() {
  ip link set veth0 up && rxe_wait_for 30 port_active rxe0 && rxe_wait_for 30 port_active rxe1 &&
    recreate_rxe0 && rxe_route_up 192.168.77.1 192.168.77.2
}
# The device deleted under running MXL. rxe cannot revoke userspace's access (mlx5 can), so
# `rdma link delete` waits in the kernel until MXL's initiators close rxe0; meanwhile the device is
# gone for everyone else: its uverbs node and netlink entry (device.c disable_device), its cm_ids
# (MXL gets RDMA_CM_EVENT_DEVICE_REMOVAL). The exporters let go of it within a tick. The delete
# finishes in the undo, once the initiators are stopped.
delete_rxe0() {
  rdma link delete rxe0 >>"$RXE_OUT/rdma-delete.log" 2>&1 &
  DELETING=$!
  rxe_wait_for 30 rxe0_unlisted || { echo "rxe0 still listed 30 s after rdma link delete"; return 1; }
}
rxe0_unlisted() { ! grep -qsx rxe0 /sys/class/infiniband_verbs/uverbs*/ibdev; }
rxe_back() {
  if [[ -n ${DELETING:-} ]]; then
    rxe_wait_for 60 deleted || { echo "rdma link delete rxe0 still waits 60 s after MXL's endpoints stopped (pids with a uverbs file open: $(uverbs_holders))"; return 1; }
    DELETING=
  fi
  rdma link add rxe0 type rxe netdev veth0 && rxe_wait_for 30 port_active rxe0
}
deleted() { ! kill -0 "$DELETING" 2>/dev/null; }
uverbs_holders() { # the pids that have a /dev/infiniband/uverbsN open (a deleted node's too)
  local p
  for p in /proc/[0-9]*; do
    if find "$p/fd" -maxdepth 1 -lname '/dev/infiniband/uverbs*' 2>/dev/null | grep -q .; then printf '%s ' "${p#/proc/}"; fi
  done
}
# MXL's target listens again once it has read the old connection's shutdown (RCTarget.cpp); an
# initiator that comes before is rejected and does not retry.
restart_initiator() { # restart_initiator F LISTENED_BEFORE
  rxe_wait_for 30 listens "$1" "$2" || { rxe_say "$1: its target did not listen again; reconnecting from a new target"; reconnect "$1"; return; }
  start_initiator "$1"
  bound_within 120 "${ID[$1]}" || { rxe_fail "$1: not measured by its connections again after its initiator restarted"; return 1; }
}

start_exporter() { # start_exporter sender|receiver PORT (all addresses: qemu's hostfwd reaches the guest's eth0)
  # Root without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (a service user's view of a folder it
  # may not read): domain-unreadable's chmod 000 then stops it; it still reads the restrack tables
  # and the maps of the MXL processes (same uid).
  setpriv --bounding-set=-dac_override,-dac_read_search --inh-caps=-dac_override,-dac_read_search \
    node dist/cli/main.js serve --config.file "$CONF/$1.yaml" --web.listen-address ":$2" --log.format json \
    >>"$RXE_OUT/exporter-$1.log" 2>&1 &
  EXPORTER[$1]=$!
  rxe_started "${EXPORTER[$1]}"
  rxe_wait_for 120 rxe_exporter_ready "$2" "${EXPORTER[$1]}" || { rxe_fail "the $1 exporter did not become ready"; return 1; }
}

# Unmodelled RDMA traffic: native/mxl-loadgen's paced RDMA writes over RDMA CM, rxe0 -> rxe1, from
# a process that maps no MXL domain (its connection carries no flow). Not perftest: ib_write_bw
# busy-polls its CQ on both ends (measured in the guest: 100 % of a CPU each, rate-limited or not,
# and -e with --rate_limit sends nothing), which starves MXL under emulation; niced, it moved rxe0
# tx by 8 %. The loadgen sleeps between writes and on CQ events.
UNMODELLED_BYTES=64000 # x 25/s = 1.6 MB/s, about half of flows A and B's 3.27 MB/s of payload
loadgen_listening() { grep -q 'listening on' "$RXE_OUT/loadgen-server.log" 2>/dev/null; }
unmodelled_start() {
  : >"$RXE_OUT/loadgen-server.log"
  native/build/mxl-loadgen serve --bind 192.168.77.2:7490 >>"$RXE_OUT/loadgen-server.log" 2>&1 &
  LOADGEN_SERVER=$!
  rxe_started "$LOADGEN_SERVER"
  rxe_wait_for 30 loadgen_listening || { echo "the loadgen server did not listen on 7490"; return 1; }
  native/build/mxl-loadgen send --connect 192.168.77.2:7490 --source 192.168.77.1 \
    --flow "id=unmodelled,bytes=$UNMODELLED_BYTES,rate=25/1" --duration 1800 >>"$RXE_OUT/loadgen-client.log" 2>&1 &
  LOADGEN_CLIENT=$!
  rxe_started "$LOADGEN_CLIENT"
  echo "unknown_pid=$LOADGEN_CLIENT"
}
unmodelled_stop() {
  kill_wait KILL "$LOADGEN_CLIENT"
  kill_wait KILL "$LOADGEN_SERVER"
}

vars() { # the substitutions of expected.yml, as KEY=VALUE lines
  echo "flow_a=$A_ID"
  echo "initiator_a_pid=${INITIATOR[a]}"
  echo "target_a_pid=${TARGET[a]}"
  echo "sender_domain=$TX"
}

# One injection or undo: prints extra KEY=VALUE lines; a non-zero exit is the fault's failure.
inject() {
  case $1 in
    sender-killed | prometheus-restarted)
      A_LISTENED=$(grep -c 'Transitioning to listening' "$RXE_OUT/a-target.log" || true)
      echo "initiator_a_pid=${INITIATOR[a]}"
      kill_wait KILL "${INITIATOR[a]}" ;;
    target-killed) echo "target_a_pid=${TARGET[a]}"; kill_wait KILL "${TARGET[a]}" ;;
    writer-stopped) kill -STOP "${WRITER[a]}" ;;
    writer-killed) kill_wait KILL "${WRITER[a]}" ;;
    link-down) ip link set veth0 down ;;
    rxe-deleted) delete_rxe0 ;;
    packet-loss) tc qdisc add dev veth0 root netem loss 2% ;;
    # 10 Mbit/s: below flow A's 13.8 Mbit/s on the wire alone, a third of both flows' 28.3
    rate-cap) tc qdisc add dev veth0 root tbf rate 10mbit burst 64kb latency 50ms ;;
    unmodelled-traffic) unmodelled_start ;;
    # QPs connected before keep their path MTU, and rxe resends a packet that no longer fits the
    # netdev at once, forever, in the kernel (send_err +5,600/s measured, QPs in RTS): the
    # emulated CPUs starve. MXL does not reconnect by itself; the flows are connected again at
    # the port's new MTU, as a restarted MXL would be.
    mtu-lowered) ip link set veth0 mtu $LOWERED_MTU && reconnect a b ;;
    domain-unreadable) DOMAIN_MODE=$(stat -c %a "$TX") && chmod 000 "$TX" ;;
    exporter-restarted)
      kill_wait KILL "${EXPORTER[sender]}"
      start_exporter sender 9842 ;;
    config-reload-refused)
      cp "$CONF/sender.yaml" "$W/sender.good.yaml"
      printf 'ports: [ { device: rxe0\n' >"$CONF/sender.yaml"
      kill -HUP "${EXPORTER[sender]}" ;;
    *) echo "no injection for fault $1"; return 1 ;;
  esac
}
undo() {
  case $1 in
    sender-killed | prometheus-restarted) restart_initiator a "$A_LISTENED" ;;
    target-killed) reconnect a ;;
    writer-stopped) kill -CONT "${WRITER[a]}" ;;
    # The flow's folder outlives a killed writer: a new one takes it over, and its fabrics
    # endpoints are started again (the initiator mapped the old writer's grains).
    writer-killed) start_writer a && reconnect a ;;
    link-down) reconnect --between link_back a b ;;
    rxe-deleted) reconnect --between rxe_back a b ;;
    packet-loss | rate-cap) tc qdisc del dev veth0 root ;;
    unmodelled-traffic) unmodelled_stop ;;
    mtu-lowered) ip link set veth0 mtu $NETDEV_MTU && reconnect a b ;;
    domain-unreadable) chmod "$DOMAIN_MODE" "$TX" ;;
    exporter-restarted) : ;;
    config-reload-refused) cp "$W/sender.good.yaml" "$CONF/sender.yaml" && kill -HUP "${EXPORTER[sender]}" ;;
    *) echo "no undo for fault $1"; return 1 ;;
  esac
}

# An answer to the host (stdin) in OUT/NAME, ended by a line ".": the host reads it only whole
# (host.mjs waitFile). Written beside it and renamed, in the share itself: a mv from the guest's
# tmpfs is a copy, which the host saw empty once.
answer() { # answer NAME
  { cat; echo .; } >"$RXE_OUT/.$1"
  mv "$RXE_OUT/.$1" "$RXE_OUT/$1"
}

# The host's commands, in order, until "end".
serve_commands() {
  local n=1 cmd verb name out rc waited
  while true; do
    waited=0
    until [[ -e $RXE_OUT/cmd-$n ]]; do
      [[ -e $RXE_OUT/host-done ]] && { rxe_say "the host side ended"; return 0; }
      sleep 0.2
      ((++waited <= CMD_TIMEOUT * 5)) || { rxe_fail "no command $n from the host side within ${CMD_TIMEOUT}s"; return 1; }
    done
    cmd=$(<"$RXE_OUT/cmd-$n")
    read -r verb name <<<"$cmd"
    [[ $verb == end ]] && return 0
    rxe_event "cmd-$n: $cmd"
    rc=0
    # Not in a subshell: the injections keep their pids in this shell's variables.
    "$verb" "$name" >"$W/out" 2>&1 </dev/null || rc=$?
    if ((rc == 0)); then
      { echo ok; vars; grep -E '^[a-z_]+=' "$W/out" || true; } | answer "done-$n"
    else
      { echo "fail: $cmd: exit $rc: $(tail -n 3 "$W/out" | tr '\n' ' ')"; vars; } | answer "done-$n"
    fi
    rxe_event "done-$n: $(head -n 1 "$RXE_OUT/done-$n")"
    n=$((n + 1))
  done
}

main() {
  [[ -x $P/bin/mxl-fabrics-demo ]] || { rxe_fail "no MXL fabrics build in $P (shared/mxl/build.sh --fabrics)"; exit 1; }
  [[ -s $GST_REGISTRY ]] || { rxe_fail "no GStreamer registry at $GST_REGISTRY (run.sh builds it on the host)"; exit 1; }
  [[ -x native/build/mxl-loadgen ]] || { rxe_fail "native/build/mxl-loadgen is not built (npm run build:native)"; exit 1; }
  command -v tc >/dev/null || { rxe_fail "tc (iproute2) is not installed on the host"; exit 1; }
  command -v setpriv >/dev/null || { rxe_fail "setpriv (util-linux) is not installed on the host"; exit 1; }
  mkdir -p "$TX" "$RX" "$W" "$CONF"
  # The configs are edited by config-reload-refused: the checkout is read-only here.
  cp "$HERE/sender.yaml" "$HERE/receiver.yaml" "$CONF/"
  local d
  # One second of history, as the connections scenario (its guest.sh says why).
  for d in "$TX" "$RX"; do echo '{ "urn:x-mxl:option:history_duration/v1.0": 1000000000 }' >"$d/options.json"; done
  ip link set veth0 mtu $NETDEV_MTU
  ip link set veth1 mtu $NETDEV_MTU
  rxe_route_up 192.168.77.1 192.168.77.2 || { rxe_fail "policy routing: 192.168.77.2 not via veth0"; exit 1; }
  local f
  for f in a b; do start_writer $f && start_target $f || exit 1; done
  start_exporter sender 9842 && start_exporter receiver 9843 || exit 1
  for f in a b; do start_initiator $f; done
  for f in a b; do bound_within 180 "${ID[$f]}" || { rxe_fail "$f: not measured by its connections on both ends"; exit 1; }; done
  { echo ok; vars; } | answer ready
  rxe_event "ready: both flows measured by their connections on both ends"
  # What the emulated CPUs carry at the baseline (the second of top's two passes: 10 s), for the report.
  top -b -n 2 -d 10 -w 160 >"$RXE_OUT/top-baseline.txt" 2>&1 &
  serve_commands
  [[ ! -s $RXE_OUT/guest-failures.txt ]]
}

main "$@"
