# shellcheck shell=bash
# Helpers for the guest scripts that talk to an exporter in the guest (sourced, not executed).
# Under TCG a fork costs tens of milliseconds: these use shell builtins only.

# GET over bash's /dev/tcp (no node start-up per request); the body goes to FILE. The headers are
# read with builtins, the body by one cat (a builtin loop appending line by line takes seconds
# for a full exposition under TCG).
rxe_http_get() { # rxe_http_get PORT PATH FILE
  local line
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'GET %s HTTP/1.0\r\nHost: guest\r\n\r\n' "$2" >&3
  while IFS= read -r line <&3 && [[ $line != $'\r' ]]; do :; done
  cat <&3 >"$3"
  exec 3<&-
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
