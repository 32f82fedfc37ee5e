#!/usr/bin/env bash
# second-client.sh -- is the harness the bottleneck of the large transfers?
#
# Starts hoard on a prepared folder, runs the large-transfer scenarios with
# one harness process, then with two harness processes at the same time, and
# prints each run's MB/s. If one client were the limit, two would together
# move clearly more than one alone.
#
#   bash bench/second-client.sh [-rounds 3 -duration 5s -big 1G ...]
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCEN=${SCEN:-get-large,put-large,up2k-large}
TMP=$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/hoard-2c.XXXXXX")
HPID=""
cleanup() { [[ -n $HPID ]] && kill -TERM "$HPID" 2>/dev/null && wait "$HPID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
cd "$REPO"
go build -o "$TMP/bench" ./bench
go build -o "$TMP/hoard" .
mkdir "$TMP/data" "$TMP/hist"
"$TMP/bench" -prepare -dir "$TMP/data" "$@" -q
"$TMP/hoard" -p 0 -i 127.0.0.1 -v "$TMP/data::rwd" -hist "$TMP/hist" > "$TMP/hoard.log" 2>&1 &
HPID=$!
for _ in $(seq 100); do grep -q 'listening on' "$TMP/hoard.log" && break; sleep 0.1; done
URL=$(grep -o 'listening on http://[^ ]*' "$TMP/hoard.log" | head -1 | sed 's/listening on //; s/"$//')
run() { "$TMP/bench" -dir "$TMP/data" -keep -target "$URL" -pid "$HPID" -scenario "$SCEN" -json -q "$@"; }
summ() { python3 -c '
import json,sys,statistics as st
r=json.load(open(sys.argv[1]))
by={}
for x in r["results"]:
    for f in x.get("figures",[]):
        if f["unit"]=="MB/s": by.setdefault(x["scenario"],[]).append(f["value"])
for k,v in by.items(): print("%-11s median %7.0f MB/s  (rounds: %s)" % (k, st.median(v), " ".join("%.0f"%y for y in v)))
' "$1"; }
echo "== one client"
run "$@" > "$TMP/one.json"; summ "$TMP/one.json"
echo "== two clients at once (each; add them up)"
run "$@" > "$TMP/a.json" & A=$!
run "$@" > "$TMP/b.json" & B=$!
wait $A; wait $B
echo "client A:"; summ "$TMP/a.json"
echo "client B:"; summ "$TMP/b.json"
