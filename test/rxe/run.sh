#!/usr/bin/env bash
# `npm run test:rxe`: the soft-RoCE end-to-end tests. Boots the rxe guest once (guest.sh) and runs
# each scenario in it in turn (scenarios.sh), each with its own results dir; a scenario with a host
# side runs it here at the same time (e.g. a real Prometheus scraping the guest through qemu's
# hostfwd). Fails, never skips, when CI is set and something is missing.
#
#   npm run test:rxe                 # every scenario
#   npm run test:rxe -- mxl          # only the named ones
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source=lib.sh
source "$HERE/lib.sh"

# One line per scenario: NAME GUEST-SCRIPT HOST-SCRIPT|- HOST-PREPARE|- (paths from the checkout).
# The guest script runs in the guest with RXE_OUT=<out>/NAME; the host script runs here with
# --out <out>/NAME --exporter 127.0.0.1:PORT (the guest's :9842) and, for a scenario with a second
# exporter (a second "host"), RXE_SECOND_EXPORTER=127.0.0.1:PORT2 (the guest's :9843); the prepare
# script runs here, before the boot, with the scenario's out dir as its argument.
SCENARIOS=(
  "exporter test/rxe/scenario-guest.sh test/rxe/scenario-host.mjs -"
  "mxl test/rxe/mxl/guest.sh - test/rxe/mxl/prepare.sh"
  "flows test/rxe/flows/guest.sh test/rxe/flows/host.mjs test/rxe/mxl/prepare.sh"
  "ethtool test/rxe/ethtool-guest.sh - -"
  "connections test/rxe/connections/guest.sh - test/rxe/mxl/prepare.sh"
  "scale test/rxe/scale/guest.sh - test/rxe/mxl/prepare.sh"
  "faults test/rxe/faults/guest.sh test/rxe/faults/host.mjs test/rxe/mxl/prepare.sh"
)

# The guest runs these from the host's root, so they must be installed here.
rxe_require_cmd ibv_devinfo ibverbs-utils
rxe_require_cmd prometheus prometheus
rxe_require_cmd ethtool ethtool
rxe_require_cmd ib_write_bw perftest
rxe_require_cmd promtool prometheus
rxe_require_cmd prometheus-alertmanager prometheus-alertmanager
rxe_require_cmd tc iproute2
compgen -G '/usr/lib/*/libibverbs/librxe-*.so' >/dev/null ||
  rxe_missing "the rxe verbs provider is missing; install it with: apt-get install ibverbs-providers"
[[ -f /usr/include/infiniband/verbs.h && -f /usr/include/rdma/rdma_cma.h ]] ||
  rxe_missing "libibverbs-dev and librdmacm-dev are needed to build native/; apt-get install libibverbs-dev librdmacm-dev"

selected=()
for line in "${SCENARIOS[@]}"; do
  read -r name _ <<<"$line"
  if (($# == 0)) || [[ " $* " == *" $name "* ]]; then selected+=("$line"); fi
done
((${#selected[@]})) || rxe_die "no scenario named: $* (known: $(printf '%s\n' "${SCENARIOS[@]}" | cut -d' ' -f1 | tr '\n' ' '))"

# The checkout is read-only in the guest: build on the host first.
(cd "$REPO" && npm run --silent build && make -s -C native)

OUT="$REPO/test/rxe/out/run-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT"
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
PORT="$(free_port)"
PORT2="$(free_port)"
while [[ $PORT2 == "$PORT" ]]; do PORT2="$(free_port)"; done
started=$(rxe_now)

guest_args=()
host_steps=()
for line in "${selected[@]}"; do
  read -r name guest host prepare <<<"$line"
  mkdir -p "$OUT/$name"
  if [[ $prepare != - ]]; then
    t=$(rxe_now)
    bash "$REPO/$prepare" "$OUT/$name" || rxe_die "$name: host preparation ($prepare) failed"
    rxe_log "$name: prepared on the host in $(rxe_elapsed "$t") s"
  fi
  guest_args+=("$name=$guest")
  [[ $host == - ]] || host_steps+=("$name $host")
done

# The scenarios before faults take about 15 minutes in the guest; faults about 17 (docs/faults.md).
guest_timeout=1500
[[ " ${selected[*]} " == *" test/rxe/faults/guest.sh "* ]] && guest_timeout=4200

# guest-ended tells each host side to stop waiting for phases that will never come.
{
  rc=0
  RXE_TIMEOUT="${RXE_TIMEOUT:-$guest_timeout}" bash "$HERE/guest.sh" --hostfwd "$PORT:9842" --hostfwd "$PORT2:9843" --out "$OUT" -- \
    bash test/rxe/scenarios.sh "${guest_args[@]}" || rc=$?
  for line in "${selected[@]}"; do read -r name _ <<<"$line"; touch "$OUT/$name/guest-ended"; done
  exit "$rc"
} &
guest=$!
host_failed=()
for step in "${host_steps[@]}"; do
  read -r name host <<<"$step"
  RXE_SECOND_EXPORTER="127.0.0.1:$PORT2" node "$REPO/$host" --out "$OUT/$name" --exporter "127.0.0.1:$PORT" || host_failed+=("$name")
done
guest_rc=0
wait "$guest" || guest_rc=$?

rxe_log "scenarios took $(rxe_elapsed "$started") s in all; results in $OUT"
[[ -f $OUT/scenario-times.txt ]] && sed 's/^/rxe:   /' "$OUT/scenario-times.txt" >&2
[[ -f $OUT/exporter/native-after.txt ]] && cat "$OUT/exporter/native-after.txt" >&2
if ((${#host_failed[@]} != 0 || guest_rc != 0)); then
  rxe_log "FAILED (host checks failed: ${host_failed[*]:-none}; guest exit $guest_rc)"
  for line in "${selected[@]}"; do
    read -r name _ <<<"$line"
    [[ -s $OUT/$name/guest-failures.txt ]] && sed "s/^/rxe: $name: /" "$OUT/$name/guest-failures.txt" >&2
  done
  exit 1
fi
rxe_log "PASSED"
