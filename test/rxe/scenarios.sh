#!/usr/bin/env bash
# Runs inside the soft-RoCE guest (test/rxe/run.sh): each scenario's guest script in turn, each
# with its own results dir $RXE_OUT/NAME (as RXE_OUT), and marks it ended for the host side.
# usage: scenarios.sh NAME=GUEST_SCRIPT...   exit: 0 when every scenario passed
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
: "${RXE_OUT:?RXE_OUT is set by guest.sh}"
top=$RXE_OUT
failed=()
for spec in "$@"; do
  name=${spec%%=*} script=${spec#*=}
  mkdir -p "$top/$name"
  start=$EPOCHREALTIME
  echo "scenarios: $name: start" >&2
  # Each scenario in its own process group: whatever it leaves running (a server on :9842, a
  # writer holding a flow) is stopped before the next one starts.
  RXE_OUT="$top/$name" setsid bash "$script" &
  pid=$!
  wait "$pid"
  rc=$?
  kill -TERM -- "-$pid" 2>/dev/null && sleep 2
  kill -KILL -- "-$pid" 2>/dev/null
  touch "$top/$name/guest-ended"
  awk -v n="$name" -v rc="$rc" -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%s exit %d, %.1f s in the guest\n", n, rc, b - a }' \
    >>"$top/scenario-times.txt"
  echo "scenarios: $name: exit $rc" >&2
  ((rc == 0)) || failed+=("$name")
done
((${#failed[@]} == 0)) || { echo "scenarios: failed: ${failed[*]}" >&2; exit 1; }
