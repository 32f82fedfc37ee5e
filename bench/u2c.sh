#!/usr/bin/env bash
# u2c.sh -- bulk upload clients against hoard and copyparty: copyparty's
# own uploader (bin/u2c.py) and hoard's (`hoard up`), same data,
# alternating rounds (hoard, copyparty, hoard, ...; u2c.py, hoard up, ...).
#
#   COPYPARTY_SRC=/work/peers/copyparty bash bench/u2c.sh [big|small|many|both|all] [ROUNDS]
#
# big: one 1 GiB file of random bytes; small: 5000 files of 4 KiB in 50
# folders; many: 100,000 files of 1-64 KiB in 1000 folders (files/s and
# the client's peak RSS). both = big small; all = big small many.
# Each round starts the server on a fresh empty volume (a new folder; the
# small files are not deleted until the end, see one()) and runs one client
# once. Reported per run: the client's wall time from start to exit
# (hashing included), u2c's own "upload:" phase where it prints one, the
# client's CPU seconds and peak RSS, and the server's CPU seconds. When a
# client's CPU time is close to its wall time, the client is the limit.
# hoard runs with its defaults (every chunk fdatasynced, files and folders
# fsynced, sessions synced); copyparty with its defaults (no fsync).
# A third server, "floor" (bench/nullup2k), answers the protocol without
# hashing, storing or syncing anything: a client's time against it is that
# client's floor on this machine, which no server can beat.
# Environment: COPYPARTY_SRC (required), PY (default /usr/bin/python3),
# BENCH_TMP (a real disk; default ${TMPDIR:-/tmp}), U2C_ARGS (extra u2c
# options for every run, e.g. "-j 8"), UP_ARGS (extra hoard up options),
# CLIENTS (default "u2c up"), SERVERS (default "hoard copyparty floor").
# UP_BASE=/path/to/another/hoard adds a client "base": that binary's
# `hoard up`, for an A/B of a client change (add "base" to CLIENTS), and
# a server "hoardbase": that binary serving, for an A/B of a server
# change (add "hoardbase" to SERVERS).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PY:-/usr/bin/python3}
CP=${COPYPARTY_SRC:?set COPYPARTY_SRC to a copyparty source tree}
MODE=${1:-both}
ROUNDS=${2:-3}
CLIENTS=${CLIENTS:-u2c up}
SERVERS=${SERVERS:-hoard copyparty floor}
TMP=$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/hoard-u2c.XXXXXX")
SPID=""
RUN=0
cleanup() { [[ -n $SPID ]] && kill -TERM "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

cd "$REPO"
go build -o "$TMP/hoard" .
go build -o "$TMP/nullup2k" ./bench/nullup2k
modes=$MODE; [[ $MODE == both ]] && modes="big small"; [[ $MODE == all ]] && modes="big small many"
for mode in $modes; do
    mkdir -p "$TMP/src/$mode"
    case $mode in
    big) head -c 1G /dev/urandom > "$TMP/src/big/f.bin" ;;
    small|many) "$PY" - "$TMP/src/$mode" "$mode" <<'EOF'
import os, random, sys
top, mode = sys.argv[1], sys.argv[2]
n, dirs = (5000, 50) if mode == "small" else (100000, 1000)
rnd = random.Random(1)
for i in range(n):
    d = os.path.join(top, "d%03d" % (i % dirs))
    os.makedirs(d, exist_ok=True)
    size = 4096 if mode == "small" else rnd.randint(1024, 65536)
    with open(os.path.join(d, "f%06d.bin" % i), "wb") as f:
        f.write(os.urandom(size))
EOF
    ;;
    esac
done
PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
TCK=$(getconf CLK_TCK)
cpu() { awk -v t="$TCK" '{print ($14+$15)/t}' "/proc/$1/stat"; }

one() { # server client mode round
    local srv=$1 cl=$2 mode=$3 r=$4 out t0
    # Small files go to a new folder each round and stay until the end: on
    # ext4 without a journal, creating thousands of files just after
    # deleting thousands makes the kernel's inode allocator skip every
    # recently freed inode (find_inode_bit -> recently_deleted, 30 s), a
    # cost every server pays that says nothing about the server.
    # Other rounds delete the last one's files (disk space: "many" writes
    # 3 GB a round; a big file is one inode).
    RUN=$((RUN + 1))
    if [[ $mode != small ]]; then rm -rf "$TMP"/dst.*; fi
    # copyparty does not fsync: without this, the kernel writes its last
    # round's gigabyte back during the next client's run, on its CPU time.
    sync
    local dst=$TMP/dst.$RUN
    mkdir "$dst"
    if [[ $srv == hoard ]]; then
        "$TMP/hoard" -p "$PORT" -i 127.0.0.1 -v "$dst::rw" --log-level warn > "$TMP/srv.log" 2>&1 &
    elif [[ $srv == hoardbase ]]; then
        "${UP_BASE:?set UP_BASE for server hoardbase}" -p "$PORT" -i 127.0.0.1 -v "$dst::rw" --log-level warn > "$TMP/srv.log" 2>&1 &
    elif [[ $srv == floor ]]; then
        "$TMP/nullup2k" -p "$PORT" > "$TMP/srv.log" 2>&1 &
    else
        (cd "$CP" && exec "$PY" -m copyparty -q -p "$PORT" -i 127.0.0.1 -v "$dst::rw" --no-robots) > "$TMP/srv.log" 2>&1 &
    fi
    SPID=$!
    for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.1; done
    t0=$(cpu "$SPID")
    if [[ $cl == u2c ]]; then
        out=$( { /usr/bin/time -f "clientcpu %e %U %S %M" "$PY" "$CP/bin/u2c.py" -ns ${U2C_ARGS:-} "http://127.0.0.1:$PORT/" "$TMP/src/$mode"; } 2>&1 | tr '\r' '\n')
    elif [[ $cl == base ]]; then
        out=$( { /usr/bin/time -f "clientcpu %e %U %S %M" "${UP_BASE:?set UP_BASE for client base}" up -q ${UP_ARGS:-} "http://127.0.0.1:$PORT/" "$TMP/src/$mode"; } 2>&1 | tr '\r' '\n')
    else
        out=$( { /usr/bin/time -f "clientcpu %e %U %S %M" "$TMP/hoard" up -q ${UP_ARGS:-} "http://127.0.0.1:$PORT/" "$TMP/src/$mode"; } 2>&1 | tr '\r' '\n')
    fi
    local up wall ccpu rss scpu
    up=$(grep -o 'upload: [0-9.]* sec' <<<"$out" | awk '{print $2}' || true)
    wall=$(awk '/^clientcpu/ {print $2}' <<<"$out")
    ccpu=$(awk '/^clientcpu/ {print $3+$4}' <<<"$out")
    rss=$(awk '/^clientcpu/ {print int($5/1024)}' <<<"$out")
    scpu=$(awk -v a="$t0" -v b="$(cpu "$SPID")" 'BEGIN {print b-a}')
    kill -TERM "$SPID"; wait "$SPID" 2>/dev/null || true; SPID=""
    n=$(find "$dst" -type f -not -path '*/.hist/*' | wc -l)
    printf '%-5s %-9s %-3s round %d: wall %7.2f s (u2c upload phase %s s)   client cpu %6.2f s, peak %4d MiB   server cpu %6.2f s   files %d\n' \
        "$mode" "$srv" "$cl" "$r" "$wall" "${up:--}" "$ccpu" "$rss" "$scpu" "$n"
    echo "$mode $srv $cl $wall $ccpu $scpu $rss" >> "$TMP/results"
}

for mode in $modes; do
    "$PY" "$CP/bin/u2c.py" -ns - "$TMP/src/$mode" > /dev/null 2>&1 || true # warm the page cache
    for r in $(seq "$ROUNDS"); do
        for srv in $SERVERS; do
            cls=$CLIENTS; (( r % 2 )) || cls=$(tr ' ' '\n' <<<"$CLIENTS" | tac | tr '\n' ' ')
            for cl in $cls; do one "$srv" "$cl" "$mode" "$r"; done
        done
        SERVERS=$(tr ' ' '\n' <<<"$SERVERS" | tac | tr '\n' ' ') # alternate the order
    done
done
"$PY" - "$TMP/results" <<'EOF'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
files = {"big": 1, "small": 5000, "many": 100000}
for mode in dict.fromkeys(r[0] for r in rows):
    med = {}
    for srv in ("hoard", "hoardbase", "copyparty", "floor"):
        for cl in ("u2c", "up", "base"):
            xs = [r for r in rows if r[0] == mode and r[1] == srv and r[2] == cl]
            if not xs:
                continue
            m = [st.median(float(x[i]) for x in xs) for i in (3, 4, 5)] + [max(int(x[6]) for x in xs)]
            med[srv, cl] = m
            print("%-5s %-9s %-3s median: wall %.2f s (%.0f files/s), client cpu %.2f s, server cpu %.2f s, client peak %d MiB (%d rounds)"
                  % (mode, srv, cl, m[0], files[mode] / m[0], m[1], m[2], m[3], len(xs)))
    def ratio(a, b, what):
        if a in med and b in med:
            print("%-5s %s: %.2fx" % (mode, what, med[a][0] / med[b][0]))
    ratio(("hoard", "u2c"), ("hoard", "up"), "u2c.py into hoard / hoard up into hoard")
    ratio(("copyparty", "u2c"), ("hoard", "up"), "u2c.py into copyparty / hoard up into hoard")
    ratio(("copyparty", "u2c"), ("copyparty", "up"), "u2c.py into copyparty / hoard up into copyparty")
    ratio(("floor", "u2c"), ("floor", "up"), "client floors: u2c.py / hoard up")
    for srv in ("hoard", "copyparty", "floor"):
        ratio((srv, "base"), (srv, "up"), "into %s: UP_BASE's hoard up / this hoard up" % srv)
    for cl in ("up", "u2c"):
        ratio(("hoardbase", cl), ("hoard", cl), "%s: into UP_BASE's hoard / into this hoard" % cl)
EOF
