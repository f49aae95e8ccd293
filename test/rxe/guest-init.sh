#!/bin/sh
# PID 1 of the rxe test guest (busybox ash inside the initramfs built by guest.sh).
# Facts relied on are in ../shared/notes/rdma-facts.md ("Soft-RoCE on these machines").
#
# Contract with guest.sh (through the writable "results" share):
#   in:  guest-job.env  RXE_OUT_DIR=<host path of the share>  RXE_NET=0|1
#        guest-job.sh   bash script: cd, exports, exec COMMAND
#   out: guest-stdout, guest-stderr, guest-dmesg.log, guest-exit-code (written last)
#        guest-init-error when setup failed before COMMAND ran

RES=/mnt/results
HOST=/mnt/host

log() { echo "rxe-init: $*" >/dev/console; }

halt_now() {
  sync
  umount "$RES" 2>/dev/null
  poweroff -f
  echo o >/proc/sysrq-trigger
  sleep 10
}

fail() {
  log "FATAL: $*"
  if grep -q " $RES 9p " /proc/mounts; then
    echo "$*" >"$RES/guest-init-error"
    dmesg >"$RES/guest-dmesg.log" 2>&1
  fi
  halt_now
}

base_mounts() {
  mkdir -p /proc /sys /dev /usr/bin /usr/sbin /sbin "$RES" "$HOST"
  /bin/busybox --install -s
  mount -t proc proc /proc
  mount -t sysfs sysfs /sys
  mount -t devtmpfs devtmpfs /dev
}

load_modules() {
  for m in /modules/*.ko; do
    insmod "$m" || fail "insmod $m"
  done
}

# msize: qemu warns the 8 KiB default degrades 9p throughput.
mount_shares() {
  opts=trans=virtio,version=9p2000.L,msize=262144
  mount -t 9p -o "$opts" results "$RES" || fail "mount results share"
  mount -t 9p -o "$opts,ro,cache=loose" hostroot "$HOST" || fail "mount hostroot share"
}

read_job() {
  [ -f "$RES/guest-job.env" ] || fail "no guest-job.env in results share"
  # shellcheck disable=SC1091  # written by guest.sh at run time
  . "$RES/guest-job.env"
}

# The results share appears at its host path, so the command sees one path both sides.
# It is bound last: an out dir under /tmp or /run must sit on top of the guest's tmpfs.
chroot_mounts() {
  keep_workdir
  mount -o bind /proc "$HOST/proc"
  mount -o bind /sys "$HOST/sys"
  mount -o bind /dev "$HOST/dev"
  mkdir -p /dev/pts /dev/shm
  mount -t devpts devpts "$HOST/dev/pts"
  mount -t tmpfs tmpfs "$HOST/dev/shm"
  mount -t tmpfs tmpfs "$HOST/run"
  mount -t tmpfs tmpfs "$HOST/tmp"
  restore_workdir
  mkdir -p "$HOST$RXE_OUT_DIR" 2>/dev/null
  mount -o bind "$RES" "$HOST$RXE_OUT_DIR" || fail "bind results dir at $RXE_OUT_DIR"
}

# A checkout under /tmp or /run (CI clones anywhere) would be hidden by the guest's tmpfs:
# hold it on a bind mount across the tmpfs mounts, then put it back at the same path.
workdir_hidden() {
  case "${RXE_WORKDIR:-}/" in /tmp/?*|/run/?*) return 0 ;; *) return 1 ;; esac
}

keep_workdir() {
  workdir_hidden || return 0
  mkdir -p /workdir-keep
  mount -o bind "$HOST$RXE_WORKDIR" /workdir-keep || fail "hold $RXE_WORKDIR across the tmpfs mounts"
}

restore_workdir() {
  workdir_hidden || return 0
  mkdir -p "$HOST$RXE_WORKDIR"
  mount -o bind /workdir-keep "$HOST$RXE_WORKDIR" || fail "put $RXE_WORKDIR back on top of the tmpfs"
}

in_root() { chroot "$HOST" /usr/bin/env PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }

# busybox's ip cannot create veth pairs; the host's iproute2 can (notes).
setup_veth() {
  in_root ip link set lo up
  in_root ip link add veth0 mtu 9000 type veth peer name veth1 mtu 9000 || fail "create veth pair"
  in_root ip addr add 192.168.77.1/24 dev veth0
  in_root ip addr add 192.168.77.2/24 dev veth1
  # Both ends stay in the initial netns: rxe on 6.1 receives nothing in another netns,
  # and two local addresses talking need rp_filter=0 + accept_local=1 (notes).
  for i in all default veth0 veth1; do
    echo 0 >"/proc/sys/net/ipv4/conf/$i/rp_filter"
    echo 1 >"/proc/sys/net/ipv4/conf/$i/accept_local"
  done
  in_root ip link set veth0 up
  in_root ip link set veth1 up
}

setup_rxe() {
  in_root rdma link add rxe0 type rxe netdev veth0 || fail "rdma link add rxe0"
  in_root rdma link add rxe1 type rxe netdev veth1 || fail "rdma link add rxe1"
}

# qemu user networking: fixed guest address, no DHCP needed (notes).
setup_eth0() {
  [ "${RXE_NET:-0}" = 1 ] || return 0
  in_root ip addr add 10.0.2.15/24 dev eth0 || fail "configure eth0"
  in_root ip link set eth0 up
}

run_job() {
  chroot "$HOST" /usr/bin/env -i \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/tmp TERM=dumb LANG=C.UTF-8 RXE_GUEST=1 RXE_OUT="$RXE_OUT_DIR" \
    /bin/bash "$RXE_OUT_DIR/guest-job.sh" \
    </dev/null >"$RES/guest-stdout" 2>"$RES/guest-stderr"
  rc=$?
  dmesg >"$RES/guest-dmesg.log" 2>&1
  echo "$rc" >"$RES/guest-exit-code.tmp"
  mv "$RES/guest-exit-code.tmp" "$RES/guest-exit-code"
}

main() {
  base_mounts
  load_modules
  mount_shares
  read_job
  chroot_mounts
  setup_veth
  setup_rxe
  setup_eth0
  log "ready, running job"
  run_job
  halt_now
}

main
