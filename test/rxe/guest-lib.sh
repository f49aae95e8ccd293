# shellcheck shell=bash
# Helpers for the guest scripts that talk to an exporter in the guest (sourced, not executed).
# Under TCG a fork costs tens of milliseconds: these use shell builtins only.

# GET over bash's /dev/tcp (no node start-up per request); the body goes to FILE, the status code
# to RXE_HTTP_STATUS. The headers are read with builtins, the body by one cat (a builtin loop
# appending line by line takes seconds for a full exposition under TCG).
rxe_http_get() { # rxe_http_get PORT PATH FILE
  local line
  RXE_HTTP_STATUS=
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'GET %s HTTP/1.0\r\nHost: guest\r\n\r\n' "$2" >&3
  IFS=' ' read -r _ RXE_HTTP_STATUS _ <&3
  while IFS= read -r line <&3 && [[ $line != $'\r' ]]; do :; done
  cat <&3 >"$3"
  exec 3<&-
}

# The exporter on PORT answers /-/ready with 200 (503 until its first sample, or without the
# bounded reader). Given its PID, an exporter that has exited ends an rxe_wait_for at once.
rxe_exporter_ready() { # rxe_exporter_ready PORT [PID]
  if [[ -n ${2-} ]] && ! kill -0 "$2" 2>/dev/null; then return 2; fi
  rxe_http_get "$1" /-/ready /dev/null 2>/dev/null && [[ $RXE_HTTP_STATUS == 200 ]]
}

rxe_wait_for() { # rxe_wait_for SECONDS TEST...: until TEST succeeds; TEST exiting 2 stops the wait
  local i rc n=$(($1 * 4)); shift
  for ((i = 0; i < n; i++)); do
    "$@" && return 0
    rc=$?
    ((rc == 2)) && return 1
    sleep 0.25
  done
  return 1
}

# A real-MXL scenario's guest script, its scaffolding: RXE_SCENARIO names it in the log; MXL's
# prefix and domains; its failures in OUT/guest-failures.txt, its timeline in OUT/events.txt; the
# processes it starts (rxe_started PID) stopped when it exits (SIGINT, a second later SIGKILL).
# The domains start empty: the guest's /dev/shm lives as long as the boot, and an earlier
# scenario's flows are left in it (a writer killed, a target's copy). A writer reuses a flow folder
# of its id whatever its definition: the faults scenario's 10 grains/s writer, over the mxl
# scenario's 25 grains/s flow of the same id, said "Reusing existing flow" and wrote no grain.
rxe_mxl_scenario() { # rxe_mxl_scenario NAME
  RXE_SCENARIO=$1
  P=${MXL_PREFIX:-/opt/mxl} TX=/dev/shm/mxl-tx RX=/dev/shm/mxl-rx
  rm -rf "$TX" "$RX"
  export GST_REGISTRY=$RXE_OUT/gst-registry.bin GST_REGISTRY_UPDATE=no
  rxe_started_pids=()
}
rxe_say() { echo "$RXE_SCENARIO-guest: $*" >&2; }
rxe_fail() { rxe_say "FAIL: $*"; echo "$*" >>"$RXE_OUT/guest-failures.txt"; }
rxe_event() { echo "$EPOCHREALTIME $*" >>"$RXE_OUT/events.txt"; rxe_say "$*"; }
rxe_started() { rxe_started_pids+=("$@"); }

# A scenario the host side checks phase by phase (exporter, flows): OUT/phase-NAME says a phase
# began, OUT/ack-NAME that the host side has checked it, OUT/host-done that the host side ended.
rxe_mark() { date +%s.%N >"$RXE_OUT/phase-$1"; rxe_say "phase $1"; }
rxe_acked() { # rxe_acked PHASE: 0 once acked, 2 once the host side ended without it (rxe_wait_for)
  [[ -e $RXE_OUT/ack-$1 ]] && return 0
  [[ -e $RXE_OUT/host-done ]] && return 2
  return 1
}
rxe_wait_ack() { # rxe_wait_ack PHASE SECONDS: the host side has checked PHASE
  rxe_wait_for "$2" rxe_acked "$1" && return 0
  if [[ -e $RXE_OUT/host-done ]]; then rxe_say "host side ended before ack-$1"; else rxe_fail "no ack-$1 from the host side within ${2}s"; fi
  return 1
}
rxe_wait_host_done() { rxe_wait_for "$1" test -e "$RXE_OUT/host-done"; } # rxe_wait_host_done SECONDS
rxe_stop_started() {
  local p
  for p in "${rxe_started_pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  sleep 1
  for p in "${rxe_started_pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
}
