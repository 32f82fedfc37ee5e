#!/usr/bin/env bash
# u2c.sh -- copyparty's own uploader (bin/u2c.py) against hoard and copyparty,
# same client, same data, alternating rounds (hoard, copyparty, hoard, ...).
#
#   COPYPARTY_SRC=/work/peers/copyparty bash bench/u2c.sh [big|small|both] [ROUNDS]
#
# big: one 1 GiB file of random bytes; small: 5000 files of 4 KiB in 50
# folders. Each round starts the server on a fresh empty volume, runs u2c
# once and reads the "upload:" phase it prints (its hashing phase is the
# client's own work and is not counted). Besides u2c's time it reports the
# CPU seconds u2c itself used and the server's CPU seconds: when u2c's own
# CPU time is close to the whole upload phase, the client is the limit.
# hoard runs with its defaults (every chunk fdatasynced, files and folders
# fsynced, sessions synced); copyparty with its defaults (no fsync).
# A third server, "floor" (bench/nullup2k), answers the protocol without
# hashing, storing or syncing anything: u2c's time against it is the
# client's own floor on this machine, which no server can beat, and
# copyparty's time over it is the best ratio any server could reach.
# Environment: COPYPARTY_SRC (required), PY (default /usr/bin/python3),
# BENCH_TMP (a real disk; default ${TMPDIR:-/tmp}), U2C_ARGS (extra u2c
# options for every run, e.g. "-j 8" for eight connections).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PY:-/usr/bin/python3}
CP=${COPYPARTY_SRC:?set COPYPARTY_SRC to a copyparty source tree}
MODE=${1:-both}
ROUNDS=${2:-3}
TMP=$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/hoard-u2c.XXXXXX")
SPID=""
cleanup() { [[ -n $SPID ]] && kill -TERM "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

cd "$REPO"
go build -o "$TMP/hoard" .
go build -o "$TMP/nullup2k" ./bench/nullup2k
mkdir -p "$TMP/src/big" "$TMP/src/small"
head -c 1G /dev/urandom > "$TMP/src/big/f.bin"
"$PY" - "$TMP/src/small" <<'EOF'
import os, sys
for i in range(5000):
    d = os.path.join(sys.argv[1], "d%02d" % (i % 50))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d.bin" % i), "wb") as f:
        f.write(os.urandom(4096))
EOF
PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
TCK=$(getconf CLK_TCK)
cpu() { awk -v t="$TCK" '{print ($14+$15)/t}' "/proc/$1/stat"; }

one() { # server mode round
    local srv=$1 mode=$2 r=$3 out t0
    rm -rf "$TMP/dst"; mkdir "$TMP/dst"
    if [[ $srv == hoard ]]; then
        "$TMP/hoard" -p "$PORT" -i 127.0.0.1 -v "$TMP/dst::rw" --log-level warn > "$TMP/srv.log" 2>&1 &
    elif [[ $srv == floor ]]; then
        "$TMP/nullup2k" -p "$PORT" > "$TMP/srv.log" 2>&1 &
    else
        (cd "$CP" && exec "$PY" -m copyparty -q -p "$PORT" -i 127.0.0.1 -v "$TMP/dst::rw" --no-robots) > "$TMP/srv.log" 2>&1 &
    fi
    SPID=$!
    for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.1; done
    t0=$(cpu "$SPID")
    out=$( { /usr/bin/time -f "u2ccpu %U %S" "$PY" "$CP/bin/u2c.py" -ns ${U2C_ARGS:-} "http://127.0.0.1:$PORT/" "$TMP/src/$mode"; } 2>&1 | tr '\r' '\n')
    local up ucpu scpu
    up=$(grep -o 'upload: [0-9.]* sec' <<<"$out" | awk '{print $2}')
    ucpu=$(awk '/^u2ccpu/ {print $2+$3}' <<<"$out")
    scpu=$(awk -v a="$t0" -v b="$(cpu "$SPID")" 'BEGIN {print b-a}')
    kill -TERM "$SPID"; wait "$SPID" 2>/dev/null || true; SPID=""
    n=$(find "$TMP/dst" -type f -not -path '*/.hist/*' | wc -l)
    printf '%-5s %-9s round %d: upload %6.2f s   u2c cpu %5.2f s   server cpu %5.2f s   files %d\n' "$mode" "$srv" "$r" "$up" "$ucpu" "$scpu" "$n"
    echo "$mode $srv $up $ucpu $scpu" >> "$TMP/results"
}

modes=$MODE; [[ $MODE == both ]] && modes="big small"
for mode in $modes; do
    "$PY" "$CP/bin/u2c.py" -ns - "$TMP/src/$mode" > /dev/null 2>&1 || true # warm the page cache
    for r in $(seq "$ROUNDS"); do
        if (( r % 2 )); then one hoard "$mode" "$r"; one copyparty "$mode" "$r"
        else one copyparty "$mode" "$r"; one hoard "$mode" "$r"; fi
        one floor "$mode" "$r"
    done
done
"$PY" - "$TMP/results" <<'EOF'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
for mode in dict.fromkeys(r[0] for r in rows):
    med = {}
    for srv in ("hoard", "copyparty", "floor"):
        xs = [r for r in rows if r[0] == mode and r[1] == srv]
        med[srv] = [st.median(float(x[i]) for x in xs) for i in (2, 3, 4)]
        print("%-5s %-9s median: upload %.2f s, u2c cpu %.2f s, server cpu %.2f s (%d rounds)" % (mode, srv, *med[srv], len(xs)))
    print("%-5s copyparty/hoard upload time: %.2fx (>1 = hoard faster)" % (mode, med["copyparty"][0] / med["hoard"][0]))
    print("%-5s copyparty/floor upload time: %.2fx (the most any server could reach with this client here)" % (mode, med["copyparty"][0] / med["floor"][0]))
EOF
