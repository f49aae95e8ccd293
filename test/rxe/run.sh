#!/usr/bin/env bash
# `npm run test:rxe`: the soft-RoCE end-to-end test. Boots the rxe guest (guest.sh), runs the
# exporter and MXL-shaped RDMA traffic in it (scenario-guest.sh), and checks the numbers with a
# real Prometheus on the host (scenario-host.mjs) through qemu's hostfwd. Fails, never skips,
# when CI is set and something is missing.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source=lib.sh
source "$HERE/lib.sh"

# The guest runs these from the host's root, so they must be installed here.
rxe_require_cmd ibv_devinfo ibverbs-utils
rxe_require_cmd prometheus prometheus
compgen -G '/usr/lib/*/libibverbs/librxe-*.so' >/dev/null ||
  rxe_missing "the rxe verbs provider is missing; install it with: apt-get install ibverbs-providers"
[[ -f /usr/include/infiniband/verbs.h && -f /usr/include/rdma/rdma_cma.h ]] ||
  rxe_missing "libibverbs-dev and librdmacm-dev are needed to build native/; apt-get install libibverbs-dev librdmacm-dev"

# The checkout is read-only in the guest: build on the host first.
(cd "$REPO" && npm run --silent build && make -s -C native)

OUT="$REPO/test/rxe/out/scenario-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT"
PORT="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
started=$(rxe_now)

# guest-ended tells the host side to stop waiting for phases that will never come.
{
  rc=0
  bash "$HERE/guest.sh" --hostfwd "$PORT:9842" --out "$OUT" -- bash test/rxe/scenario-guest.sh || rc=$?
  touch "$OUT/guest-ended"
  exit "$rc"
} &
guest=$!
host_rc=0
node "$HERE/scenario-host.mjs" --out "$OUT" --exporter "127.0.0.1:$PORT" || host_rc=$?
guest_rc=0
wait "$guest" || guest_rc=$?

rxe_log "scenario took $(rxe_elapsed "$started") s; results in $OUT"
[[ -f $OUT/native-after.txt ]] && cat "$OUT/native-after.txt" >&2
if ((host_rc != 0 || guest_rc != 0)); then
  rxe_log "FAILED (host checks exit $host_rc, guest exit $guest_rc)"
  [[ -s $OUT/guest-failures.txt ]] && cat "$OUT/guest-failures.txt" >&2
  exit 1
fi
rxe_log "PASSED"
# Issue 15: the ethtool reader against ethtool -S on the guest's netdevs (its own boot).
bash "$HERE/ethtool.sh"
