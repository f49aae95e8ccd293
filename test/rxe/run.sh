#!/usr/bin/env bash
# `npm run test:rxe`: boots the rxe guest and runs the smoke check in it.
# Placeholder: the real scenario (exporter + load generator + Prometheus) replaces
# smoke.sh here; guest.sh stays the launcher.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$HERE/lib.sh"

# The guest runs these from the host's root, so they must be installed here.
rxe_require_cmd ibv_devinfo ibverbs-utils
rxe_require_cmd ib_write_bw perftest
compgen -G '/usr/lib/*/libibverbs/librxe-*.so' >/dev/null ||
  rxe_missing "the rxe verbs provider is missing; install it with: apt-get install ibverbs-providers"

exec bash "$HERE/guest.sh" -- bash test/rxe/smoke.sh
