#!/usr/bin/env bash
# ab.sh -- one change measured: two hoard binaries on the same data, in
# alternating rounds (the harness's -compare), each with its own state
# folder. Steadier than two compare.sh runs for a single change: the same
# fixtures, the same page cache, the same minute.
#
#   git stash && go build -o /tmp/base . && git stash pop && go build -o /tmp/new .
#   bash bench/ab.sh /tmp/base /tmp/new -scenario up2k-many,put-small -rounds 5 -duration 4s
#
# Arguments after the two binaries go to the harness (both the prepare step
# and the run). Environment: BENCH_TMP (parent of the data folder, a real
# disk; default ${TMPDIR:-/tmp}), HOARD_ARGS (extra flags for both
# servers), VFLAGS (volume flags for both, e.g. VFLAGS=put_ck=no),
# ENV_A / ENV_B (environment for one of them, e.g.
# ENV_B="GODEBUG=gctrace=1 GOGC=300"), KEEP=1 (keep the temporary folder
# with the servers' logs, base.log and new.log).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -ge 2 ] || { echo "usage: ab.sh BASE_BIN NEW_BIN [harness args...]" >&2; exit 2; }
A=$(realpath "$1"); B=$(realpath "$2"); shift 2
TMP=$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/hoard-ab.XXXXXX")
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ "${KEEP:-}" = 1 ] && echo "[ab] kept $TMP" >&2 || rm -rf "$TMP"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

(cd "$REPO" && go build -o "$TMP/bench" ./bench)
mkdir -p "$TMP/data"
"$TMP/bench" -dir "$TMP/data" -prepare -q "$@" > /dev/null

start() { # start NAME BIN ENV
    local port; port=$(free_port)
    mkdir -p "$TMP/$1"
    # shellcheck disable=SC2086
    env ${3:-} "$2" -p "$port" -i 127.0.0.1 -v "$TMP/data::rwmd${VFLAGS:+:c,$VFLAGS}" -e2dsa -hist "$TMP/$1" ${HOARD_ARGS:-} > "$TMP/$1.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 100); do
        curl -s -o /dev/null "http://127.0.0.1:$port/" && break
        sleep 0.1
    done
    echo "$1=http://127.0.0.1:$port" > "$TMP/$1.url"
    echo "$1=$!" > "$TMP/$1.pid"
}
start base "$A" "${ENV_A:-}"
start new "$B" "${ENV_B:-}"
"$TMP/bench" -dir "$TMP/data" -compare "$(cat "$TMP/base.url"),$(cat "$TMP/new.url")" \
    -pid "$(cat "$TMP/base.pid"),$(cat "$TMP/new.pid")" "$@"
