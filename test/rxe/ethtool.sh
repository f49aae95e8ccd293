#!/usr/bin/env bash
# The ethtool reader against ethtool -S in the soft-RoCE guest (veth0, veth1, virtio_net eth0).
# Run by run.sh after the main scenario; alone: RXE_CACHE=... bash test/rxe/ethtool.sh
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source=lib.sh
source "$HERE/lib.sh"
rxe_require_cmd ethtool ethtool
(cd "$REPO" && npm run --silent build)
OUT="$REPO/test/rxe/out/ethtool-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT"
# --hostfwd gives the guest its virtio_net eth0 (qemu user networking); the port is unused.
PORT="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
started=$(rxe_now)
bash "$HERE/guest.sh" --hostfwd "$PORT:9842" --out "$OUT" -- bash test/rxe/ethtool-guest.sh
rxe_log "ethtool scenario PASSED in $(rxe_elapsed "$started") s"
