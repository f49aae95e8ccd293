# shellcheck shell=bash
# Shared helpers for the rxe harness scripts (sourced, not executed).

rxe_log() { echo "rxe: $*" >&2; }

rxe_die() {
  rxe_log "error: $*"
  exit 1
}

# A missing prerequisite fails under CI; elsewhere it is a skip (exit 77).
rxe_missing() {
  if [[ -n "${CI:-}" ]]; then
    rxe_log "error (CI is set, not skipping): $*"
    exit 1
  fi
  rxe_log "skipped: $*"
  exit 77
}

# rxe_require_cmd COMMAND DEBIAN-PACKAGE
rxe_require_cmd() {
  command -v "$1" >/dev/null 2>&1 ||
    rxe_missing "'$1' not found; install it with: apt-get install $2"
}

rxe_now() { date +%s.%N; }

# rxe_elapsed START -> seconds since START with one decimal
rxe_elapsed() { awk -v a="$1" -v b="$(rxe_now)" 'BEGIN { printf "%.1f", b - a }'; }
