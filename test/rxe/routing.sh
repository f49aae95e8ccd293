# shellcheck shell=bash
# Policy routing between the two rxe ends, shared by the guest scenarios that use RDMA CM
# (sourced, not executed). Both ends are local addresses of one netns: without these rules RDMA CM
# resolves the peer as loopback and nothing crosses the veths (../shared/notes/rdma-facts.md, the
# netns traps). Idempotent both ways, so scenarios that run one after another in one boot each find
# the guest's routing as it was.

rxe_route_up() { # rxe_route_up SRC DST: SRC leaves on veth0, DST on veth1
  local src=$1 dst=$2
  rxe_route_down "$src" "$dst"
  ip rule add pref 10 iif lo from "$src" to "$dst" lookup 100
  ip rule add pref 10 iif lo from "$dst" to "$src" lookup 101
  ip route replace "$dst" dev veth0 src "$src" table 100
  ip route replace "$src" dev veth1 src "$dst" table 101
  ip rule del pref 0 lookup local
  ip rule add pref 1000 lookup local
  ip route get "$dst" from "$src" | grep -q 'dev veth0'
}

rxe_route_down() { # rxe_route_down SRC DST: undo rxe_route_up, whatever part of it ran
  local src=$1 dst=$2
  ip rule del pref 10 iif lo from "$src" to "$dst" lookup 100 2>/dev/null || true
  ip rule del pref 10 iif lo from "$dst" to "$src" lookup 101 2>/dev/null || true
  ip route flush table 100 2>/dev/null || true
  ip route flush table 101 2>/dev/null || true
  if ip rule show pref 1000 | grep -q local; then ip rule del pref 1000 lookup local; ip rule add pref 0 lookup local; fi
}
