#!/usr/bin/env bash
# Smoke check run INSIDE the guest (via guest.sh): both rxe devices are up and an RDMA
# WRITE from rxe0 to rxe1 moves the packet counters as rdma-facts.md predicts.
set -euo pipefail

SIZE=8192
ITERS=100
PORT=18515
ib_dir() { echo "/sys/class/infiniband/$1/ports/1"; }

counter() { cat "$(ib_dir "$1")/hw_counters/$2"; }

# GID index whose type is RoCE v2 and whose GID is IPv4-mapped (::ffff:a.b.c.d).
# The table order is not fixed (the IPv6 link-local entry may come first), so look it up.
roce_v2_ipv4_gid() {
  local dir t i
  dir="$(ib_dir "$1")"
  for t in "$dir"/gid_attrs/types/*; do
    i="${t##*/}"
    [[ "$(cat "$t" 2>/dev/null)" == "RoCE v2" ]] || continue
    [[ "$(cat "$dir/gids/$i")" == 0000:0000:0000:0000:0000:ffff:* ]] || continue
    echo "$i"
    return 0
  done
  echo "no IPv4 RoCE v2 GID on $1" >&2
  return 1
}

show_devices() {
  rdma link
  ibv_devinfo -d rxe0
  local i
  for i in 0 1 2 3; do
    printf 'rxe0 gid %s: %s %s\n' "$i" "$(cat "$(ib_dir rxe0)/gids/$i")" \
      "$(cat "$(ib_dir rxe0)/gid_attrs/types/$i" 2>/dev/null || echo '-')"
  done
}

wait_listen() {
  local _
  for _ in $(seq 100); do
    ss -Hltn "sport = :$PORT" | grep -q . && return 0
    sleep 0.2
  done
  echo "server never listened on $PORT" >&2
  return 1
}

run_write_bw() {
  local g0 g1 srv
  g0="$(roce_v2_ipv4_gid rxe0)"
  g1="$(roce_v2_ipv4_gid rxe1)"
  echo "RoCE v2 IPv4 GID index: rxe0=$g0 rxe1=$g1"
  # Server and client both stay in the initial netns (rdma-facts.md).
  timeout 120 ib_write_bw -d rxe1 -x "$g1" -s "$SIZE" -n "$ITERS" -F -p "$PORT" \
    >"$RXE_OUT/smoke-server.log" 2>&1 &
  srv=$!
  wait_listen
  timeout 120 ib_write_bw -d rxe0 -x "$g0" -s "$SIZE" -n "$ITERS" -F -p "$PORT" 192.168.77.2 |
    tee "$RXE_OUT/smoke-client.log"
  wait "$srv"
}

# rdma-facts.md: -s 8192 -n 100 gave rxe0 sent_pkts +200 (100 x 8192/4096) and
# rcvd_pkts +100 (ACKs); rxe1 the mirror image. Retransmissions may add a few.
check_counters() {
  local s0="$1" r1="$2" tx="$3" ds dr dtx
  ds=$(($(counter rxe0 sent_pkts) - s0))
  dr=$(($(counter rxe1 rcvd_pkts) - r1))
  dtx=$(($(cat /sys/class/net/veth0/statistics/tx_bytes) - tx))
  echo "rxe0 sent_pkts +$ds, rxe1 rcvd_pkts +$dr, veth0 tx_bytes +$dtx"
  local want=$((ITERS * SIZE / 4096))
  ((ds >= want && dr >= want)) || { echo "FAIL: expected at least $want packets" >&2; return 1; }
  ((ds == want)) || echo "note: $((ds - want)) extra packets sent (retransmissions?)"
}

main() {
  show_devices
  local s0 r1 tx
  s0="$(counter rxe0 sent_pkts)"
  r1="$(counter rxe1 rcvd_pkts)"
  tx="$(cat /sys/class/net/veth0/statistics/tx_bytes)"
  run_write_bw
  check_counters "$s0" "$r1" "$tx"
  rdma statistic show link rxe0/1
  echo "SMOKE OK"
}

main "$@"
