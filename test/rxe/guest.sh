#!/usr/bin/env bash
# Run a command as root inside a throwaway qemu guest that has two soft-RoCE devices:
# rxe0 on veth0 (192.168.77.1) and rxe1 on veth1 (192.168.77.2). See README.md here.
#
# usage: test/rxe/guest.sh [--hostfwd HOSTPORT:GUESTPORT]... [--out DIR] [--cwd DIR]
#                          [-e NAME=VALUE]... -- COMMAND [ARG]...
#
# COMMAND runs chrooted into the host's root (read-only), cwd = the checkout, with
# $RXE_OUT = a writable directory shared with the host (default test/rxe/out/).
# Exit code: COMMAND's; 124 on timeout (RXE_TIMEOUT, default 600 s); 125 if the guest
# never reported one; 77 when a prerequisite is missing and CI is unset.
# shellcheck disable=SC2317  # functions called through with_cache_lock look unreachable
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source=lib.sh
source "$HERE/lib.sh"

CACHE="${RXE_CACHE:-$HERE/cache}"
TIMEOUT="${RXE_TIMEOUT:-600}"
OUT="$HERE/out"
WORKDIR="$REPO"
HOSTFWDS=()
JOB_ENV=()
CMD=()

# Guest modules in load order (rdma-facts.md); crc32_generic is not a declared
# dependency of rdma_rxe but `rdma link add` fails without it. failover, net_failover
# and virtio_net come in through virtio_net's dependencies.
# rdma_ucm (with ib_cm, iw_cm, rdma_cm) gives /dev/infiniband/rdma_cm for librdmacm.
# sch_netem and sch_tbf: the faults scenario's packet loss and rate cap (tc).
GUEST_MODULES=(crc32_generic virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev
  virtio_pci netfs fscache 9pnet 9p 9pnet_virtio udp_tunnel ip6_udp_tunnel ib_core
  ib_uverbs rdma_ucm rdma_rxe veth virtio_net sch_netem sch_tbf)

usage() {
  sed -n '5,6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

parse_args() {
  while (($#)); do
    case "$1" in
      --hostfwd) [[ "${2:-}" =~ ^[0-9]+:[0-9]+$ ]] || usage; HOSTFWDS+=("$2"); shift 2 ;;
      --out) [[ -n "${2:-}" ]] || usage; OUT="$2"; shift 2 ;;
      --cwd) [[ -n "${2:-}" ]] || usage; WORKDIR="$2"; shift 2 ;;
      -e) [[ "${2:-}" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || usage; JOB_ENV+=("$2"); shift 2 ;;
      --) shift; CMD=("$@"); break ;;
      *) usage ;;
    esac
  done
  ((${#CMD[@]})) || usage
  [[ "$TIMEOUT" =~ ^[0-9]+$ ]] || rxe_die "RXE_TIMEOUT must be whole seconds"
}

check_host() {
  rxe_require_cmd qemu-system-x86_64 qemu-system-x86
  rxe_require_cmd cpio cpio
  rxe_require_cmd depmod kmod
  rxe_require_cmd modprobe kmod
  rxe_require_cmd apt-get apt
  rxe_require_cmd dpkg-deb dpkg
  local ldd_out
  ldd_out="$(ldd /bin/busybox 2>&1 || true)"
  [[ -x /bin/busybox && "$ldd_out" == *"not a dynamic"* ]] ||
    rxe_missing "a static /bin/busybox is needed; install it with: apt-get install busybox-static"
  # Run in the guest from the shared host root.
  [[ -x /usr/bin/ip && -x /usr/bin/rdma ]] ||
    rxe_missing "ip and rdma are needed; install them with: apt-get install iproute2"
}

# Newest Debian 6.1 kernel, unsigned flavour preferred (plain bzImage); the facts in
# rdma-facts.md were measured on 6.1. RXE_KERNEL_PKG overrides.
pick_kernel_pkg() {
  if [[ -n "${RXE_KERNEL_PKG:-}" ]]; then
    echo "$RXE_KERNEL_PKG"
    return
  fi
  apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64(-unsigned)?$' 2>/dev/null |
    awk '{ print $1 }' | sort -V | awk '
      { base = $0; sub(/-unsigned$/, "", base); if (base != last) order[++n] = base; last = base
        best[base] = ($0 ~ /-unsigned$/ || !(base in best)) ? $0 : best[base] }
      END { if (n) print best[order[n]] }'
}

# Reuses any cached kernel when apt cannot name or fetch one (e.g. offline).
newest_cached_kernel() {
  local d
  d="$(find "$CACHE" -maxdepth 1 -name 'kernel-*' -type d -exec test -e '{}/.done' ';' -print 2>/dev/null |
    sort -V | tail -n 1)"
  [[ -n "$d" ]] && echo "$d"
}

# Runs in a `||` context (errexit is off there), so each step is checked.
download_kernel() {
  local pkg="$1" dir="$2" tmp="$2.partial" deb kver
  rm -rf "$tmp" && mkdir -p "$tmp" || return 1
  (cd "$tmp" && apt-get download -q "$pkg" >&2) || return 1
  deb="$(ls "$tmp"/*.deb)" && dpkg-deb -x "$deb" "$tmp/root" && rm -f "$deb" || return 1
  kver="$(ls "$tmp/root/lib/modules")" && depmod -b "$tmp/root" "$kver" || return 1
  echo "$kver" >"$tmp/kver" && touch "$tmp/.done" || return 1
  # One kernel (~400 MB unpacked) is enough; older ones and their initrds go.
  find "$CACHE" -maxdepth 1 \( -name 'kernel-*' -o -name 'initrd-*' \) ! -path "$tmp" \
    -exec rm -rf '{}' + && mv "$tmp" "$dir"
}

# Sets KDIR (unpacked package root) and KVER.
fetch_kernel() {
  local t0 pkg ver dir
  t0="$(rxe_now)"
  pkg="$(pick_kernel_pkg)"
  if [[ -n "$pkg" ]]; then
    ver="$(apt-cache policy "$pkg" 2>/dev/null | awk '/Candidate:/ { print $2 }')"
    dir="$CACHE/kernel-${pkg}_${ver//[:\/]/_}"
    if [[ ! -e "$dir/.done" ]]; then
      rxe_log "downloading $pkg $ver"
      download_kernel "$pkg" "$dir" || { rxe_log "download of $pkg failed"; rm -rf "$dir.partial"; dir=""; }
    fi
  fi
  [[ -n "${dir:-}" && -e "$dir/.done" ]] || dir="$(newest_cached_kernel)" ||
    rxe_missing "no Debian 6.1 kernel: apt-get download linux-image-6.1.0-*-amd64 failed and $CACHE has none (run apt-get update?)"
  KDIR="$dir/root"
  KVER="$(cat "$dir/kver")"
  rxe_log "kernel $KVER ready in $(rxe_elapsed "$t0") s ($dir)"
}

# Module files for GUEST_MODULES with their dependencies, in load order, deduplicated.
resolve_modules() {
  local m
  for m in "${GUEST_MODULES[@]}"; do
    modprobe -d "$KDIR" -S "$KVER" --show-depends "$m" ||
      rxe_die "module $m not found in $KVER"
  done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }'
}

initramfs_key() {
  { cat "$HERE/guest-init.sh"; printf '%s\n' "${GUEST_MODULES[@]}"; sha256sum /bin/busybox; } |
    sha256sum | cut -c1-16
}

# Sets INITRD, cached per kernel version and init script. Numbering the modules from
# 10 keeps the guest's glob in load order.
build_initramfs() {
  local t0 stage n=10 f mods
  t0="$(rxe_now)"
  INITRD="$CACHE/initrd-$KVER-$(initramfs_key).cpio.gz"
  if [[ ! -s "$INITRD" ]]; then
    stage="$(mktemp -d "$CACHE/initrd.XXXXXX")"
    mkdir -p "$stage/bin" "$stage/modules"
    cp /bin/busybox "$stage/bin/busybox"
    ln -s busybox "$stage/bin/sh"
    install -m 0755 "$HERE/guest-init.sh" "$stage/init"
    mods="$(resolve_modules)"
    for f in $mods; do
      cp "$f" "$stage/modules/$((n++))-$(basename "$f")"
    done
    (cd "$stage" && find . -print0 | cpio --null -o -H newc -R 0:0 --quiet) |
      gzip -1 >"$INITRD.tmp"
    rm -rf "$stage"
    mv "$INITRD.tmp" "$INITRD"
  fi
  rxe_log "initramfs ready in $(rxe_elapsed "$t0") s ($(basename "$INITRD"))"
}

with_cache_lock() {
  mkdir -p "$CACHE"
  exec 8>"$CACHE/.lock"
  flock 8
  "$@"
  flock -u 8
}

# The out dir is locked for the whole run: a second run on it fails fast.
prepare_out() {
  mkdir -p "$OUT"
  OUT="$(cd "$OUT" && pwd)"
  WORKDIR="$(cd "$WORKDIR" && pwd)"
  [[ "$OUT" =~ ^/[A-Za-z0-9._/+-]+$ ]] || rxe_die "out dir path must be plain characters: $OUT"
  # The guest mounts its own /proc, /sys and /dev over the host's (a checkout under /tmp or
  # /run is bound back on top of the guest's tmpfs by guest-init.sh).
  [[ "$WORKDIR/" =~ ^/(proc|sys|dev)/ ]] && rxe_die "--cwd is hidden in the guest: $WORKDIR"
  [[ "$WORKDIR" =~ ^/[A-Za-z0-9._/+-]+$ ]] || rxe_die "--cwd path must be plain characters: $WORKDIR"
  exec 9>"$OUT/.guest.lock"
  flock -n 9 || rxe_die "another guest.sh run is using $OUT"
  rm -f "$OUT"/guest-{job.env,job.sh,stdout,stderr,exit-code,exit-code.tmp,dmesg.log,console.log,init-error}
}

write_job() {
  local e
  printf 'RXE_OUT_DIR=%s\nRXE_NET=%s\nRXE_WORKDIR=%s\n' "$OUT" "$((${#HOSTFWDS[@]} > 0))" "$WORKDIR" >"$OUT/guest-job.env"
  {
    echo "# written by test/rxe/guest.sh; runs in the guest under bash"
    printf 'cd -- %q\n' "$WORKDIR"
    for e in "${JOB_ENV[@]}"; do printf 'export %s=%q\n' "${e%%=*}" "${e#*=}"; done
    printf 'exec'; printf ' %q' "${CMD[@]}"; printf '\n'
  } >"$OUT/guest-job.sh"
  : >"$OUT/guest-stdout"
  : >"$OUT/guest-stderr"
}

# restrict=on: the guest reaches nothing outside; hostfwd rules still work.
nic_args() {
  ((${#HOSTFWDS[@]})) || return 0
  local nic="user,model=virtio-net-pci,restrict=on" h
  for h in "${HOSTFWDS[@]}"; do nic+=",hostfwd=tcp:127.0.0.1:${h%%:*}-:${h##*:}"; done
  printf '%s\n' -nic "$nic"
}

# KVM hangs on these machines; TCG with -cpu max boots (rdma-facts.md). RXE_CPU overrides the model.
qemu_args() {
  local kernel="$KDIR/boot/vmlinuz-$KVER"
  printf '%s\n' -accel tcg -cpu "${RXE_CPU:-max}" -smp "${RXE_SMP:-2}" -m "${RXE_MEM:-2048}" \
    -nodefaults -nographic -serial stdio -no-reboot \
    -kernel "$kernel" -initrd "$INITRD" \
    -append "console=ttyS0 panic=-1 quiet mitigations=off" \
    -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
    -virtfs "local,path=$OUT,mount_tag=results,security_model=none,multidevs=remap"
  nic_args
}

QEMU_PID=""
TAIL_PIDS=()

cleanup() {
  if [[ -n "$QEMU_PID" ]]; then kill "$QEMU_PID" 2>/dev/null || true; fi
  if ((${#TAIL_PIDS[@]})); then kill "${TAIL_PIDS[@]}" 2>/dev/null || true; fi
}

# Streams the command's output live; tail --pid reads the rest once qemu is gone.
stream_output() {
  tail -q -s 0.2 -n +1 -f --pid="$QEMU_PID" "$OUT/guest-stdout" &
  TAIL_PIDS+=($!)
  tail -q -s 0.2 -n +1 -f --pid="$QEMU_PID" "$OUT/guest-stderr" >&2 &
  TAIL_PIDS+=($!)
  if [[ -n "${RXE_VERBOSE:-}" ]]; then
    tail -q -s 0.2 -n +1 -F --pid="$QEMU_PID" "$OUT/guest-console.log" >&2 2>/dev/null &
    TAIL_PIDS+=($!)
  fi
}

# Sets BOOT_RC (qemu's, or 124 from timeout).
boot() {
  local t0 args
  t0="$(rxe_now)"
  mapfile -t args < <(qemu_args)
  rxe_log "booting guest (timeout ${TIMEOUT}s)"
  timeout -k 10 "$TIMEOUT" qemu-system-x86_64 "${args[@]}" </dev/null >"$OUT/guest-console.log" 2>&1 &
  QEMU_PID=$!
  stream_output
  BOOT_RC=0
  wait "$QEMU_PID" || BOOT_RC=$?
  QEMU_PID=""
  wait "${TAIL_PIDS[@]}" 2>/dev/null || true
  TAIL_PIDS=()
  rxe_log "guest ran for $(rxe_elapsed "$t0") s"
}

guest_failed() {
  rxe_log "$1; last console lines ($OUT/guest-console.log):"
  # Drop SeaBIOS's terminal escapes.
  tail -n 40 "$OUT/guest-console.log" | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g' >&2 || true
  [[ -s "$OUT/guest-init-error" ]] && rxe_log "guest init: $(cat "$OUT/guest-init-error")"
  exit "$2"
}

report() {
  if [[ -s "$OUT/guest-exit-code" ]]; then
    local rc
    rc="$(cat "$OUT/guest-exit-code")"
    rxe_log "command exited with $rc (files in $OUT)"
    exit "$rc"
  fi
  ((BOOT_RC == 124)) && guest_failed "timed out after ${TIMEOUT}s (RXE_TIMEOUT)" 124
  guest_failed "guest stopped without an exit code (qemu exit $BOOT_RC)" 125
}

main() {
  parse_args "$@"
  check_host
  with_cache_lock fetch_kernel
  with_cache_lock build_initramfs
  prepare_out
  write_job
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  boot
  report
}

main "$@"
