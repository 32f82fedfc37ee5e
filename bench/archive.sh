#!/usr/bin/env bash
# archive.sh -- folder archives (?tar, ?zip), hoard beside copyparty, and the
# compressed variants beside the command-line tools at the same level.
#
#   a. ?tar of a folder of BIG_MB MiB in 4 random files        (MB/s, both servers)
#   b. ?tar and ?zip of SMALL_N small files (1-16 KiB, 50 dirs) (files/s and MB/s)
#   c. ?tar=gz, ?tar=xz, ?tar=bz2 (default levels 3, 1, 2) of a compressible
#      corpus (CORPUS_MB MiB of /usr/lib and /usr/share/doc) vs
#      `tar cf - | gzip -3`, `| pigz -3`, `| xz -1`, `| xz -T0 -1`, `| bzip2 -2`
#      (MB/s of tar input); copyparty's compressed variants too
#   d. strace -c of hoard during one ?tar of (a): sendfile vs write calls
#
# Each round runs hoard and copyparty alternately (the order flips every
# round), and in (c) the tool right after them; the medians and the
# hoard/copyparty ratio are printed.  curl reads the whole body
# (-o /dev/null); time is curl's time_total.  Beside wall time, the server's
# CPU time per request (utime+stime+children from /proc/PID/stat) is shown:
# it holds up better than wall time on a machine shared with other work.
#
# Environment: ROUNDS (3), BIG_MB (1024), SMALL_N (5000), CORPUS_MB (64),
# COPYPARTY_SRC (/work/peers/copyparty; copyparty skipped if missing),
# PY (/usr/bin/python3), HOARD_BIN (default: go build), BENCH_TMP (/tmp),
# KEEP=1 keeps the temp dir.  Binds 127.0.0.1 only; stops what it started.
set -euo pipefail
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)
ROUNDS=${ROUNDS:-3}
BIG_MB=${BIG_MB:-1024}
SMALL_N=${SMALL_N:-5000}
CORPUS_MB=${CORPUS_MB:-64}
COPYPARTY_SRC=${COPYPARTY_SRC:-/work/peers/copyparty}
PY=${PY:-/usr/bin/python3}

TMP=$(mktemp -d "${BENCH_TMP:-/tmp}/hoard-archbench-XXXXXX")
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [[ ${KEEP:-} == 1 ]] && echo "kept $TMP" >&2 || rm -rf "$TMP"
}
trap cleanup EXIT
log() { printf '%s %s\n' "$(date +%T)" "$*" >&2; }

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$1/" && return; sleep 0.1; done; echo "port $1 never answered" >&2; exit 1; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# ---------------------------------------------------------------- data
DATA=$TMP/data
mkdir -p "$DATA/big" "$DATA/small" "$DATA/corpus" "$TMP/state"
log "making $BIG_MB MiB in 4 files, $SMALL_N small files, a $CORPUS_MB MiB corpus"
for i in 1 2 3 4; do head -c $((BIG_MB * 1024 * 1024 / 4)) /dev/urandom > "$DATA/big/part$i.bin"; done
"$PY" - "$DATA/small" "$SMALL_N" <<'EOF'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2]); r = random.Random(1)
for i in range(n):
    d = os.path.join(root, "d%02d" % (i % 50)); os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d.dat" % i), "wb") as f: f.write(r.randbytes(r.randint(1024, 16384)))
EOF
(cd / && tar cf - usr/lib/x86_64-linux-gnu usr/share/doc 2>/dev/null || true) | head -c $((CORPUS_MB * 1024 * 1024)) | tar xf - -C "$DATA/corpus" 2>/dev/null || true
cat "$DATA"/big/* > /dev/null; tar cf - -C "$DATA" small corpus > /dev/null   # warm the page cache

# ---------------------------------------------------------------- servers
declare -A PORT
if [[ -z ${HOARD_BIN:-} ]]; then HOARD_BIN=$TMP/hoard; (cd "$REPO" && go build -o "$HOARD_BIN" .); fi
PORT[hoard]=$(free_port)
"$HOARD_BIN" -i 127.0.0.1 -p "${PORT[hoard]}" -v "$DATA::r" --hist "$TMP/state/hoard" --log-level warn > "$TMP/hoard.log" 2>&1 &
PIDS+=($!); HOARD_PID=$!
SERVERS="hoard"
if [[ -f $COPYPARTY_SRC/copyparty/__main__.py ]]; then
    PORT[copyparty]=$(free_port)
    (cd "$COPYPARTY_SRC" && exec "$PY" -m copyparty -i 127.0.0.1 -p "${PORT[copyparty]}" -v "$DATA::r" \
        --http-only --no-crt --no-thumb --hist "$TMP/state/cpp" -q) > "$TMP/copyparty.log" 2>&1 &
    PIDS+=($!); CPP_PID=$!
    SERVERS="hoard copyparty"
else
    log "no copyparty source at $COPYPARTY_SRC: hoard only"
fi
for s in $SERVERS; do wait_port "${PORT[$s]}"; done

declare -A SPID=([hoard]=$HOARD_PID [copyparty]=${CPP_PID:-})
ticks() { awk '{print $14+$15+$16+$17}' "/proc/$1/stat"; }
TCK=$(getconf CLK_TCK)
# fetch SERVER PATH -> "seconds bytes cpu-seconds"
fetch() {
    local c0 c1 out
    c0=$(ticks "${SPID[$1]}")
    out=$(curl -sS -o /dev/null -w '%{time_total} %{size_download}' "http://127.0.0.1:${PORT[$1]}$2")
    c1=$(ticks "${SPID[$1]}")
    echo "$out $(awk -v a="$c0" -v b="$c1" -v t="$TCK" 'BEGIN{printf "%.3f", (b-a)/t}')"
}

declare -A RES
measure() { # name path
    local name=$1 path=$2 r s order t n c
    for r in $(seq "$ROUNDS"); do
        order=$SERVERS; (( r % 2 == 0 )) && order=$(echo "$SERVERS" | tr ' ' '\n' | tac | tr '\n' ' ')
        for s in $order; do
            read -r t n c < <(fetch "$s" "$path")
            RES[$name.$s]+="$(awk -v n="$n" -v t="$t" 'BEGIN{printf "%.1f", n/t/1e6}') "
            RES[$name.$s.t]+="$t "
            RES[$name.$s.c]+="$c "
            RES[$name.$s.n]=$n
        done
    done
}
report() { # name files
    local name=$1 files=${2:-0} s mb t c line base=""
    line=$(printf '%-14s' "$name")
    for s in $SERVERS; do
        mb=$(echo "${RES[$name.$s]}" | tr ' ' '\n' | grep . | median)
        t=$(echo "${RES[$name.$s.t]}" | tr ' ' '\n' | grep . | median)
        c=$(echo "${RES[$name.$s.c]}" | tr ' ' '\n' | grep . | median)
        line+=$(printf ' | %-9s %8.1f MB/s %7.3f s %6.3f cpu-s' "$s" "$mb" "$t" "$c")
        (( files > 0 )) && line+=$(awk -v f="$files" -v t="$t" 'BEGIN{printf " %7.0f files/s", f/t}')
        [[ -z $base ]] && base=$mb || line+=$(awk -v a="$base" -v b="$mb" 'BEGIN{printf " | hoard/copyparty %.2fx", a/b}')
    done
    echo "$line"
}

log "measuring ($ROUNDS rounds, alternating $SERVERS)"
measure big-tar "/big/?tar"
measure small-tar "/small/?tar"
measure small-zip "/small/?zip"
measure small-zipcrc "/small/?zip=crc"

# compressed: per round, each server and then the tool at the same level
TARBYTES=$(tar cf - -C "$DATA" corpus | wc -c)
declare -A TOOL=([gz]="gzip -3" [pigz]="pigz -3" [xz]="xz -1" [xzmt]="xz -T0 -1" [bz2]="bzip2 -2")
command -v pigz > /dev/null || unset 'TOOL[pigz]'
for r in $(seq "$ROUNDS"); do
    for c in gz xz bz2; do
        ROUNDS_SAVE=$ROUNDS; ROUNDS=1; measure "corpus-$c" "/corpus/?tar=$c"; ROUNDS=$ROUNDS_SAVE
        for k in "${!TOOL[@]}"; do
            [[ $k == "$c" || ($c == gz && $k == pigz) || ($c == xz && $k == xzmt) ]] || continue
            s0=$(date +%s%N); tar cf - -C "$DATA" corpus | ${TOOL[$k]} -c > /dev/null; e0=$(date +%s%N)
            RES[tool-$k]+="$(awk -v n="$TARBYTES" -v d=$((e0 - s0)) 'BEGIN{printf "%.1f", n/(d/1e9)/1e6}') "
        done
    done
done

echo "== archives: median of $ROUNDS rounds, MB/s of archive bytes, server CPU seconds per request =="
report big-tar
report small-tar "$SMALL_N"
report small-zip "$SMALL_N"
report small-zipcrc "$SMALL_N"
for c in gz xz bz2; do report "corpus-$c"; done
echo "== compressed variants vs the command-line tools, MB/s of tar input ($TARBYTES bytes) =="
for c in gz xz bz2; do
    for s in $SERVERS; do
        t=$(echo "${RES[corpus-$c.$s.t]}" | tr ' ' '\n' | grep . | median)
        printf '%-16s %8.1f MB/s  (%d bytes out)\n' "$s ?tar=$c" "$(awk -v n="$TARBYTES" -v t="$t" 'BEGIN{printf "%.1f", n/t/1e6}')" "${RES[corpus-$c.$s.n]}"
    done
done
for k in gz pigz xz xzmt bz2; do
    [[ -n ${TOOL[$k]:-} ]] || continue
    printf '%-16s %8.1f MB/s\n' "${TOOL[$k]}" "$(echo "${RES[tool-$k]}" | tr ' ' '\n' | grep . | median)"
done

# ---------------------------------------------------------------- strace
if command -v strace > /dev/null; then
    echo "== strace -c of hoard during one /big/?tar =="
    strace -f -c -e trace=sendfile,write,writev,read,pread64 -p "$HOARD_PID" -o "$TMP/strace.txt" &
    SP=$!; sleep 1
    fetch hoard "/big/?tar" > /dev/null
    sleep 0.5; kill -INT "$SP"; wait "$SP" 2>/dev/null || true
    cat "$TMP/strace.txt"
fi
