#!/usr/bin/env bash
# The `ethtool` scenario, run INSIDE the guest (test/rxe/run.sh, scenarios.sh): the ethtool reader
# against `ethtool -S` on the guest's real netdevs (veth0/veth1 under rxe, virtio_net eth0), the
# cost of one values read, the host assumptions `check` reports for rxe0 (veth has no DCB:
# PFC unknown, never a failure), and the reader's libibverbs ops against `ibv_devinfo -v`.
# Results in $RXE_OUT.
set -euo pipefail
: "${RXE_OUT:?RXE_OUT is set by scenarios.sh}"
fail=0
failed() { echo "$*"; echo "$*" >>"$RXE_OUT/guest-failures.txt"; fail=1; }

# Traffic first, so that some counters are not zero: ping over the veth pair and eth0's link.
ping -c 3 -q 192.168.77.2 >/dev/null 2>&1 || true

compare() {
  local ifname=$1
  ethtool -S "$ifname" >"$RXE_OUT/ethtool-S-$ifname.txt"
  node dist/sources/ethtool/probe.js "$ifname" --repeat 1000 >"$RXE_OUT/probe-$ifname.json"
  # ethtool -S second, then the reader once more: counters may only have grown in between.
  node -e '
    const fs = require("fs");
    const [ifname, sFile, pFile] = process.argv.slice(1);
    const s = {};
    for (const line of fs.readFileSync(sFile, "utf8").split("\n").slice(1)) {
      const m = /^\s+(.+): (\d+)$/.exec(line);
      if (m) s[m[1]] = m[2];
    }
    const p = JSON.parse(fs.readFileSync(pFile, "utf8"));
    const names = (o) => Object.keys(o).join(",");
    if (names(s) !== names(p.stats)) { console.log(`ethtool ${ifname}: NAMES DIFFER\n ethtool -S: ${names(s)}\n reader:     ${names(p.stats)}`); process.exit(1); }
    const diff = Object.keys(s).filter((n) => s[n] !== p.stats[n]);
    console.log(`ethtool ${ifname}: driver ${p.driver}, ${Object.keys(s).length} statistics, ${Object.keys(s).length - diff.length} equal values` +
      `${diff.length ? ` (moving between the two reads: ${diff.map((n) => `${n} ${s[n]}->${p.stats[n]}`).join(", ")})` : ""}, ` +
      `${p.microsecondsPerValuesRead.toFixed(1)} us per ETHTOOL_GSTATS read`);
    // Only counters that move between the two reads may differ, and only upwards.
    if (diff.some((n) => BigInt(p.stats[n]) < BigInt(s[n]))) process.exit(1);
  ' "$ifname" "$RXE_OUT/ethtool-S-$ifname.txt" "$RXE_OUT/probe-$ifname.json" || failed "ethtool $ifname: the reader differs from ethtool -S"
}

for ifname in veth0 veth1 eth0; do compare "$ifname"; done

# check on rxe0: veth has no DCB, so pfc is UNKNOWN and provisioning is not failed by it.
cat >"$RXE_OUT/check.yaml" <<'YAML'
ports:
  - { device: rxe0, port: 1 }
YAML
out=$(node dist/cli/main.js check --config.file "$RXE_OUT/check.yaml") || failed "check exited non-zero"
echo "$out" | tee "$RXE_OUT/check.txt"
# The check column is as wide as the longest check name (netdev-mtu): match any padding.
grep -Eq '^  UNKNOWN pfc +PFC state unknown: veth0 has no DCB support \(the kernel answered EOPNOTSUPP\)$' <<<"$out" || failed "check: pfc line not as expected"
grep -Eq '^  OK +vlan +veth0 is untagged' <<<"$out" || failed "check: vlan line not as expected"
grep -q '^provisioning: ok$' <<<"$out" || failed "check: provisioning not ok"

# libibverbs on the reader threads (verbsOpen/verbsQueryPort/verbsQueryGids) against ibv_devinfo -v.
ibv_devinfo -v >"$RXE_OUT/ibv_devinfo-v.txt" || failed "ibv_devinfo -v failed"
node test/rxe/verbs-devinfo.mjs "$RXE_OUT/ibv_devinfo-v.txt" | tee "$RXE_OUT/verbs-devinfo.txt"
[[ ${PIPESTATUS[0]} == 0 ]] || failed "verbs: the reader's libibverbs answers differ from ibv_devinfo -v"

exit "$fail"
