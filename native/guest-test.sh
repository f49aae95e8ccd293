#!/usr/bin/env bash
# Runs INSIDE the rxe test guest (test/rxe/guest.sh): mxl-loadgen serve on rxe1
# (192.168.77.2), send from rxe0 (192.168.77.1), and compares grains and NIC counters
# with what the flows should produce. Build on the host first (make -C native): the
# guest sees the checkout read-only.
#
#   test/rxe/guest.sh --out native/build/guest-out -- native/guest-test.sh [DURATION]
#
# Results: $RXE_OUT/{flows.json,send.json,serve.json,send.log,serve.log,loadgen-result.json}
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
BIN="$HERE/build/mxl-loadgen"
OUT="${RXE_OUT:-$(mktemp -d)}"
DURATION="${1:-20}"
SRC=192.168.77.1
DST=192.168.77.2

die() { echo "guest-test: $*" >&2; exit 1; }
[[ -x "$BIN" ]] || die "no $BIN; run make -C native on the host first"

# The harness loads ib_core/ib_uverbs/rdma_rxe but not the connection manager that
# rdma_cm needs; load it from the same unpacked kernel the guest booted.
load_cm_modules() {
  [[ -e /dev/infiniband/rdma_cm ]] && return 0
  local root
  root="$(ls -d "$REPO"/test/rxe/cache/kernel-*/root 2>/dev/null | head -n 1)"
  [[ -d "$root/lib/modules/$(uname -r)" ]] || die "no modules for $(uname -r) under test/rxe/cache"
  modprobe -d "$root" -S "$(uname -r)" rdma_ucm || die "modprobe rdma_ucm failed"
  local n
  for n in $(seq 50); do
    [[ -e /dev/infiniband/rdma_cm ]] && return 0
    sleep 0.1
  done
  die "/dev/infiniband/rdma_cm did not appear after loading rdma_ucm"
}

IB=/sys/class/infiniband
NET=/sys/class/net
snapshot() { # snapshot NAME: counters as shell-friendly KEY=VALUE lines
  local f
  {
    for f in sent_pkts rcvd_pkts duplicate_request out_of_seq_request rcvd_seq_err \
      completer_retry_err retry_exceeded_err rcvd_rnr_err send_rnr_err; do
      echo "rxe0_$f=$(cat "$IB/rxe0/ports/1/hw_counters/$f")"
      echo "rxe1_$f=$(cat "$IB/rxe1/ports/1/hw_counters/$f")"
    done
    for f in tx_bytes tx_packets rx_bytes rx_packets; do
      echo "veth0_$f=$(cat "$NET/veth0/statistics/$f")"
      echo "veth1_$f=$(cat "$NET/veth1/statistics/$f")"
    done
  } >"$OUT/counters-$1.txt"
}

# Three small MXL-shaped flows, ~3 MB/s together (TCG runs rxe at 20-30 MB/s):
#  video/v210 192x108 at 30000/1001: 512 B/line * 108 + 8192 header = 63488 B per grain
#  audio 2 ch float32 48 kHz, 10 ms batches: 3840 + 16-byte batch header = 3856 B
#  data (smpte291) at 60000/1001: 4096 + 8192 header = 12288 B
cat >"$OUT/flows.json" <<'JSON'
[
  { "flowId": "5fbec3b1-1b0f-417d-9059-8b94a47197ed", "writeBytes": 63488, "rate": "30000/1001" },
  { "flowId": "b3bb5be7-9fe9-4324-a5bb-4c70e1084449", "writeBytes": 3856, "rate": "100/1" },
  { "flowId": "db3bd465-2772-484f-8fac-830b0471258f", "writeBytes": 12288, "rate": "60000/1001" }
]
JSON

load_cm_modules
ulimit -l unlimited 2>/dev/null || true
echo "guest-test: $(uname -r), duration ${DURATION}s"
cat "$IB/rxe0/ports/1/active_mtu" 2>/dev/null | sed 's/^/rxe0 active_mtu: /' || true

# Timer quality of this guest alone: the same schedule without RDMA.
"$BIN" send --pace-only --flows-json "$OUT/flows.json" --duration 5 --json >"$OUT/pace-only.json"
python3 -c '
import json, sys
for f in json.load(open(sys.argv[1]))["flows"]:
    print("pace-only %s: %d/%d grains, late %d, max %.2f ms, mean %.3f ms" % (f["flowId"][:8],
          f["grainsSent"], f["grainsExpected"], f["lateGrains"], f["maxLatenessNs"] / 1e6, f["meanLatenessNs"] / 1e6))
' "$OUT/pace-only.json"

# Error path: nobody listens on this port, so the connect must fail with a clear message.
neg_rc=0
timeout 120 "$BIN" send --connect "$DST:7999" --source "$SRC" --flow id=neg,bytes=4096,rate=25 \
  --duration 1 >/dev/null 2>"$OUT/negative.log" || neg_rc=$?
echo "no-listener check: exit $neg_rc: $(tail -n 1 "$OUT/negative.log")"
[[ "$neg_rc" == 1 ]] || die "send to a port without a listener should exit 1"

timeout $((DURATION * 3 + 120)) "$BIN" serve --bind "$DST" --until-disconnect --json \
  >"$OUT/serve.json" 2>"$OUT/serve.log" &
SERVE=$!
for n in $(seq 100); do
  grep -q "listening on" "$OUT/serve.log" && break
  kill -0 "$SERVE" 2>/dev/null || { cat "$OUT/serve.log" >&2; die "serve exited early"; }
  sleep 0.2
done
grep -q "listening on" "$OUT/serve.log" || die "serve never listened"
cat "$OUT/serve.log"

snapshot before
send_rc=0
timeout $((DURATION * 3 + 60)) "$BIN" send --connect "$DST" --source "$SRC" \
  --flows-json "$OUT/flows.json" --duration "$DURATION" --json \
  >"$OUT/send.json" 2>"$OUT/send.log" || send_rc=$?
serve_rc=0
wait "$SERVE" || serve_rc=$?
snapshot after
cat "$OUT/send.log" "$OUT/serve.log" >&2
echo "send exit $send_rc, serve exit $serve_rc"

python3 - "$OUT" "$DURATION" <<'PY'
import json, math, sys
out, duration = sys.argv[1], float(sys.argv[2])
def counters(name):
    d = {}
    for line in open(f"{out}/counters-{name}.txt"):
        k, v = line.strip().split("=", 1)
        d[k] = int(v)
    return d
b, a = counters("before"), counters("after")
delta = {k: a[k] - b[k] for k in a}
send = json.load(open(f"{out}/send.json"))
serve = json.load(open(f"{out}/serve.json"))
rx = {f["flowId"]: f for f in serve["flows"]}

rows, tot = [], dict(grains=0, expected=0, pkts_mtu=0, pkts_seed=0, netdev=0, seed_wire=0, late=0)
for f in send["flows"]:
    num, den = map(int, f["rate"].split("/"))
    n, size, mtu = f["grainsSent"], f["writeBytes"], f["pathMtu"] or 4096
    p_mtu = math.ceil(size / mtu)                # what rxe does: payload per packet = path MTU
    p_seed = math.ceil(size / (4096 - 44))       # the seed model: mtu - providerMtuOverheadBytes
    # netdev bytes per write: payload + 58 per packet (Eth 14, IPv4 20, UDP 8, BTH 12, ICRC 4)
    # + RETH 16 on the first packet + ImmDt 4 on the last (rdma-facts.md, IBA 9.4.3/9.4.5)
    netdev = size + 58 * p_mtu + 16 + 4
    r = rx.get(f["flowId"][:40], {})
    rows.append(dict(flowId=f["flowId"], writeBytes=size, rate=f["rate"],
        grainsExpectedDurationXRate=duration * num / den, grainsExpected=f["grainsExpected"],
        grainsSent=n, grainsReceived=r.get("grainsReceived"), bytesReceived=r.get("bytesReceived"),
        missingGrains=r.get("missingGrains"), lateGrains=f["lateGrains"],
        maxLatenessMs=f["maxLatenessNs"] / 1e6, meanLatenessMs=f["meanLatenessNs"] / 1e6,
        achievedRate=f["achievedRate"], nominalRate=num / den, receivedRate=r.get("receivedRate"),
        packetsPerWriteMtu=p_mtu, packetsPerWriteSeed=p_seed))
    tot["grains"] += n; tot["expected"] += f["grainsExpected"]; tot["late"] += f["lateGrains"]
    tot["pkts_mtu"] += n * p_mtu; tot["pkts_seed"] += n * p_seed
    tot["netdev"] += n * netdev; tot["seed_wire"] += n * (size + 82 * p_seed)

res = dict(durationS=duration, flows=rows, counters=delta,
    model=dict(packetsCeilBytesOver4096=tot["pkts_mtu"], packetsSeedCeilBytesOver4052=tot["pkts_seed"],
               netdevTxBytesExpected=tot["netdev"], seedWireBytes=tot["seed_wire"]),
    comparison=dict(
        rxe0SentPktsMinusModel=delta["rxe0_sent_pkts"] - tot["pkts_mtu"],
        rxe0SentPktsMinusSeedModel=delta["rxe0_sent_pkts"] - tot["pkts_seed"],
        veth0TxBytesMinusExpected=delta["veth0_tx_bytes"] - tot["netdev"],
        veth0TxPacketsMinusRxe0SentPkts=delta["veth0_tx_packets"] - delta["rxe0_sent_pkts"]))
json.dump(res, open(f"{out}/loadgen-result.json", "w"), indent=1)

for r in rows:
    print(f"{r['flowId'][:8]} {r['writeBytes']:>6} B @ {r['rate']:>10}: sent {r['grainsSent']}/{r['grainsExpected']} "
          f"(duration x rate {r['grainsExpectedDurationXRate']:.1f}), received {r['grainsReceived']}, "
          f"missing {r['missingGrains']}, late {r['lateGrains']} (max {r['maxLatenessMs']:.2f} ms, "
          f"mean {r['meanLatenessMs']:.3f} ms), rate {r['achievedRate']:.4f}/{r['nominalRate']:.4f}, "
          f"pkts/write {r['packetsPerWriteMtu']} (seed {r['packetsPerWriteSeed']})")
print(f"rxe0 sent_pkts +{delta['rxe0_sent_pkts']} vs model ceil(bytes/4096) {tot['pkts_mtu']} "
      f"(diff {res['comparison']['rxe0SentPktsMinusModel']}), seed ceil(bytes/4052) {tot['pkts_seed']}")
print(f"rxe0 rcvd_pkts +{delta['rxe0_rcvd_pkts']} (ACKs); rxe1 rcvd_pkts +{delta['rxe1_rcvd_pkts']}, "
      f"sent_pkts +{delta['rxe1_sent_pkts']}; retries: rxe1 duplicate_request +{delta['rxe1_duplicate_request']}, "
      f"out_of_seq +{delta['rxe1_out_of_seq_request']}, rxe0 completer_retry_err +{delta['rxe0_completer_retry_err']}")
print(f"veth0 tx_bytes +{delta['veth0_tx_bytes']} vs expected {tot['netdev']} "
      f"(diff {res['comparison']['veth0TxBytesMinusExpected']}); tx_packets +{delta['veth0_tx_packets']}; "
      f"seed wire bytes (with preamble/IFG/FCS) {tot['seed_wire']}")
PY
exit $((send_rc || serve_rc))
