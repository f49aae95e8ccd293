#!/usr/bin/env bash
# Host-side checks of mxl-loadgen that need no RDMA device: argument parsing, the
# --flows-json reader and the pacing schedule (--dry-run).
# usage: native/test-args.sh [path/to/mxl-loadgen]
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="${1:-$HERE/build/mxl-loadgen}"
[[ -x "$BIN" ]] || { echo "no binary at $BIN (run: make -C native)" >&2; exit 1; }
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# expect_rc RC DESCRIPTION -- ARGS...: exit status and (optional) stderr substring via $WANT_ERR
expect_rc() {
  local want="$1" what="$2"
  shift 3
  "$BIN" "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  if [[ "$rc" != "$want" ]]; then
    bad "$what: exit $rc, want $want; stderr: $(head -c 300 "$TMP/err")"
    return
  fi
  if [[ -n "${WANT_ERR:-}" ]] && ! grep -qF -- "$WANT_ERR" "$TMP/err"; then
    bad "$what: stderr lacks '$WANT_ERR': $(head -c 300 "$TMP/err")"
    return
  fi
  ok
}

expect_out() { # expect_out DESCRIPTION STRING: STRING must appear in the last stdout
  if grep -qF -- "$2" "$TMP/out"; then ok; else bad "$1: stdout lacks '$2': $(head -c 400 "$TMP/out")"; fi
}

CAM=id=cam1,bytes=5537792,rate=30000/1001

# --- help, version, usage errors
expect_rc 0 "top-level help" -- --help
expect_out "help mentions send" "send --connect"
expect_rc 0 "send help" -- send --help
expect_rc 0 "serve help" -- serve --help
expect_rc 0 "version" -- --version
expect_rc 2 "no command" --
expect_rc 2 "unknown command" -- blast
WANT_ERR="no flows" expect_rc 2 "send without flows" -- send --connect 192.0.2.1 --duration 1
WANT_ERR="--duration SECONDS is required" expect_rc 2 "send without duration" -- send --connect 192.0.2.1 --flow "$CAM"
WANT_ERR="--connect ADDR[:PORT] is required" expect_rc 2 "send without connect" -- send --flow "$CAM" --duration 1
WANT_ERR="needs a value" expect_rc 2 "dangling --flow" -- send --flow
WANT_ERR="unknown argument" expect_rc 2 "unknown send option" -- send --flow "$CAM" --duration 1 --bogus 3
WANT_ERR="--bind ADDR[:PORT] is required" expect_rc 2 "serve without bind" -- serve
WANT_ERR="port must be" expect_rc 2 "bad port" -- serve --bind 127.0.0.1:99999

# --- flow specs
WANT_ERR="missing rate" expect_rc 2 "spec without rate" -- send --dry-run 1 --flow id=a,bytes=10 --duration 1
WANT_ERR="missing id" expect_rc 2 "spec without id" -- send --dry-run 1 --flow bytes=10,rate=25 --duration 1
WANT_ERR="unknown key 'size'" expect_rc 2 "spec unknown key" -- send --dry-run 1 --flow id=a,size=10,rate=25 --duration 1
WANT_ERR="rate '0/1'" expect_rc 2 "zero rate" -- send --dry-run 1 --flow id=a,bytes=10,rate=0/1 --duration 1
WANT_ERR="rate '25/0'" expect_rc 2 "zero denominator" -- send --dry-run 1 --flow id=a,bytes=10,rate=25/0 --duration 1
WANT_ERR="rate '-25/1'" expect_rc 2 "negative rate" -- send --dry-run 1 --flow id=a,bytes=10,rate=-25/1 --duration 1
WANT_ERR="bytes must be 1.." expect_rc 2 "zero bytes" -- send --dry-run 1 --flow id=a,bytes=0,rate=25 --duration 1
WANT_ERR="bytes must be 1.." expect_rc 2 "bytes over 2^31" -- send --dry-run 1 --flow id=a,bytes=2147483649,rate=25 --duration 1
WANT_ERR="not a non-negative integer" expect_rc 2 "bytes not a number" -- send --dry-run 1 --flow id=a,bytes=1e6,rate=25 --duration 1
WANT_ERR="given twice" expect_rc 2 "duplicate ids" -- send --dry-run 1 --flow id=a,bytes=1,rate=25 --flow id=a,bytes=2,rate=25 --duration 1
WANT_ERR="--duration" expect_rc 2 "bad duration" -- send --dry-run 1 --flow "$CAM" --duration 1s
WANT_ERR="--duration" expect_rc 2 "zero duration" -- send --dry-run 1 --flow "$CAM" --duration 0
WANT_ERR="--depth" expect_rc 2 "zero depth" -- send --dry-run 1 --flow "$CAM" --duration 1 --depth 0

# --- pacing maths: due(k) = floor(k * den * 1e9 / num), grains = ceil(duration * num / den)
expect_rc 0 "dry run ntsc" -- send --dry-run 4 --flow "$CAM" --duration 10
expect_out "ntsc grain count" "grains=300 bytes_total=1661337600"
expect_out "ntsc grain 1" "grain 1 due 33366666 ns (+33366666)"
expect_out "ntsc grain 2" "grain 2 due 66733333 ns (+33366667)"
expect_out "ntsc grain 3" "grain 3 due 100100000 ns (+33366667)"
expect_out "ntsc last grain" "grain 299 due 9976633333 ns (+33366667)"
# No drift: after exactly num grains the schedule is exactly den seconds in.
expect_rc 0 "dry run 1001 s" -- send --dry-run 1 --flow "$CAM" --duration 1001.000000001
expect_out "grain 30000 lands on 1001 s" "grain 30000 due 1001000000000 ns"
expect_out "grain count over 1001 s" "grains=30001"
# A grain due exactly at the duration is not sent.
expect_rc 0 "dry run boundary" -- send --dry-run 5 --flow "$CAM" --duration 0.1001
expect_out "boundary count" "grains=3 "
expect_rc 0 "dry run audio" -- send --dry-run 2 --flow id=aud,bytes=3856,rate=100 --duration 2.5
expect_out "audio count" "grains=250 bytes_total=964000"
expect_out "audio last" "grain 249 due 2490000000 ns (+10000000)"
# One week at 60000/1001: k * den * 1e9 exceeds 2^64 here, so this checks the 128-bit maths
# (expected values computed independently with Python integers).
expect_rc 0 "dry run 1 week" -- send --dry-run 0 --flow id=v,bytes=1,rate=60000/1001 --duration 604800
expect_out "week count" "grains=36251749 "
expect_out "week last grain" "grain 36251748 due 604799995800000 ns (+16683334)"
expect_rc 0 "dry run json" -- send --dry-run 2 --flow "$CAM" --duration 1 --json
expect_out "json keys" '"flowId":"cam1","writeBytes":5537792,"rate":"30000/1001","grainsExpected":30'
if python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/out" 2>/dev/null; then ok; else bad "dry-run --json is not valid JSON"; fi

# --- --pace-only: the real-time scheduler without RDMA (lateness depends on the machine)
expect_rc 0 "pace only" -- send --pace-only --flow id=a,bytes=100,rate=100 --flow id=b,bytes=10,rate=30000/1001 --duration 0.3 --json
expect_out "pace only counts" '"grainsExpected":30,"grainsPosted":30,"grainsSent":30,"bytesSent":3000'
expect_out "pace only ntsc counts" '"grainsExpected":9,"grainsPosted":9,"grainsSent":9,"bytesSent":90'
if python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/out" 2>/dev/null; then ok; else bad "pace-only --json is not valid JSON"; fi

# --- --flows-json (the exporter's calc --output json shape)
cat >"$TMP/flows.json" <<'JSON'
[
  { "flowId": "5fbec3b1-1b0f-417d-9059-8b94a47197ed", "writeBytes": 5537792, "rate": "30000/1001",
    "label": "cam \"one\"", "extra": { "nested": [1, 2.5e3, true, null] } },
  { "flowId": "aud\u00e9", "writeBytes": 3856, "rate": 100 }
]
JSON
expect_rc 0 "flows-json" -- send --dry-run 1 --flows-json "$TMP/flows.json" --flow id=data,bytes=12288,rate=60000/1001 --duration 1
expect_out "json flow 1" "flow 5fbec3b1-1b0f-417d-9059-8b94a47197ed: bytes=5537792 rate=30000/1001 grains=30"
expect_out "json flow 2 utf-8" "flow audé: bytes=3856 rate=100/1 grains=100"
expect_out "json + --flow" "flow data: bytes=12288 rate=60000/1001 grains=60"
echo '[]' >"$TMP/empty.json"
WANT_ERR="no flows" expect_rc 2 "empty flows-json" -- send --dry-run 1 --flows-json "$TMP/empty.json" --duration 1
printf '[\n {"flowId": "a", "writeBytes": 10}\n]\n' >"$TMP/missing.json"
WANT_ERR='entry 0: missing "rate"' expect_rc 2 "flows-json missing key" -- send --dry-run 1 --flows-json "$TMP/missing.json" --duration 1
printf '[\n {"flowId": "a",\n  "writeBytes": "10", "rate": "1/1"}]\n' >"$TMP/strbytes.json"
WANT_ERR="entry 0: writeBytes must be a number" expect_rc 2 "flows-json string bytes" -- send --dry-run 1 --flows-json "$TMP/strbytes.json" --duration 1
printf '[{"flowId": "a", "writeBytes": 10, "rate": "1/1"},]' >"$TMP/trailing.json"
WANT_ERR="line 1 column 51: unexpected token" expect_rc 2 "flows-json trailing comma" -- send --dry-run 1 --flows-json "$TMP/trailing.json" --duration 1
printf '{"flowId": "a"}' >"$TMP/object.json"
WANT_ERR="expected a JSON array" expect_rc 2 "flows-json not an array" -- send --dry-run 1 --flows-json "$TMP/object.json" --duration 1
WANT_ERR="open: No such file" expect_rc 2 "flows-json missing file" -- send --dry-run 1 --flows-json "$TMP/nope.json" --duration 1
expect_rc 0 "flows-json from stdin" -- send --dry-run 1 --flows-json - --duration 1 <"$TMP/flows.json"

# --- calc's write lists: "writes" per grain, and MXL's audio batch from "audio" (transfer.c)
cat >"$TMP/calc.json" <<'JSON'
[
 {"flowId": "slices", "eventRate": "25/1", "writeBytesPerEvent": 169472,
  "writes": [{"bytes": 65536, "immediate": true, "entries": 1}, {"bytes": 57344, "immediate": true}, {"bytes": 46592, "immediate": true}]},
 {"flowId": "audio8", "eventRate": "100/1", "writeBytesPerEvent": 15376,
  "writes": [{"bytes": 5776, "immediate": false}, {"bytes": 7680, "immediate": false}, {"bytes": 1920, "immediate": true}],
  "ring": {"lengthSamples": 19456, "wrapsPerBatch": "479/19456"},
  "audio": {"channels": 8, "samplesPerBatch": 480, "sampleBytes": 4, "headerBytes": 16, "txIovLimit": 4, "ringLengthSamples": 19456}},
 {"flowId": "audio2", "eventRate": "100/1",
  "audio": {"channels": 2, "samplesPerBatch": 480, "sampleBytes": 4, "headerBytes": 16, "txIovLimit": 4, "ringLengthSamples": 19456}}
]
JSON
expect_rc 0 "calc writes and audio" -- send --dry-run 2 --flows-json "$TMP/calc.json" --duration 1 --audio-head 19200
expect_out "slice writes, region = their sum" "flow slices: bytes=169472 rate=25/1"
expect_out "slice writes in order" "grain 0 due 0 ns (+0) writes 65536i+57344i+46592i"
expect_out "8 ch: 9 entries = 3 writes" "grain 0 due 0 ns (+0) writes 5776+7680+1920i"
expect_out "8 ch wrapping after 256 samples: 17 entries = 5 writes" "grain 1 due 10000000 ns (+10000000) writes 2960+3840+3840+3840+896i"
expect_out "2 ch: 3 entries = 1 write" "flow audio2: bytes=3856 rate=100/1"
expect_out "2 ch wrapping: 5 entries = 2 writes" "grain 1 due 10000000 ns (+10000000) writes 2960+896i"
expect_rc 0 "audio from sample 0" -- send --dry-run 41 --flows-json "$TMP/calc.json" --duration 1
expect_out "the 41st batch of a 19,456 ring wraps (ends at 19,680)" "grain 40 due 400000000 ns (+10000000) writes 2960+896i"
printf '[{"flowId": "a", "rate": "100/1", "audio": {"channels": 2, "samplesPerBatch": 480, "sampleBytes": 4, "ringLengthSamples": 900}}]' >"$TMP/badaudio.json"
WANT_ERR="samplesPerBatch must be 1..ringLengthSamples/2" expect_rc 2 "audio batch over half the ring" -- send --dry-run 1 --flows-json "$TMP/badaudio.json" --duration 1
printf '[{"flowId": "a", "rate": "1/1", "writes": [{"bytes": "x"}]}]' >"$TMP/badwrites.json"
WANT_ERR="writes[].bytes must be a non-negative integer" expect_rc 2 "writes with a string size" -- send --dry-run 1 --flows-json "$TMP/badwrites.json" --duration 1

echo "test-args: $pass passed, $fail failed"
((fail == 0))
