#!/usr/bin/env bash
# media.sh -- thumbnail throughput, hoard vs copyparty, alternating A B per round.
#
# Per server and round, with fresh file names (so the cache is cold):
#   a. IMG_N 12-megapixel JPEGs (4000x3000), ?th=j (JPEG, 320x256 crop),
#      CONC requests at a time: thumbnails/s cold, then each 25 times more (cached)
#   b. VID_N 10 s 1280x720 H.264 videos, ?th=j: thumbnails/s cold and cached
#   c. peak RSS (VmHWM) of the server after the run
# Prints medians per server and the ratio hoard/copyparty.
#
# copyparty uses Pillow or pyvips when installed, else FFmpeg, for images;
# the script prints which one it had.
#
# Environment: COPYPARTY_SRC (default /work/peers/copyparty; skipped when
# missing), PY (/usr/bin/python3), HOARD_BIN (default: go build), ROUNDS (3),
# IMG_N (12), VID_N (8), CONC (2), KEEP=1 keeps the temp dir.
# Binds 127.0.0.1 only; stops what it started and removes its temp dir.
set -euo pipefail
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)
ROUNDS=${ROUNDS:-3}
IMG_N=${IMG_N:-12}
VID_N=${VID_N:-8}
CONC=${CONC:-2}
PY=${PY:-/usr/bin/python3}
COPYPARTY_SRC=${COPYPARTY_SRC:-/work/peers/copyparty}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/hoard-media-bench.XXXXXX")
declare -A PID=() PORT=()
cleanup() {
    for s in "${!PID[@]}"; do kill "${PID[$s]}" 2>/dev/null || true; wait "${PID[$s]}" 2>/dev/null || true; done
    [[ ${KEEP:-0} == 1 ]] && echo "kept $TMP" >&2 || rm -rf "$TMP"
}
trap cleanup EXIT

freeport() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

HOARD_BIN=${HOARD_BIN:-}
if [[ -z $HOARD_BIN ]]; then
    HOARD_BIN=$TMP/hoard
    (cd "$REPO" && go build -o "$HOARD_BIN" .)
fi

echo "generating media..." >&2
mkdir -p "$TMP/src"
ffmpeg -nostdin -v error -y -f lavfi -i "testsrc2=s=4000x3000,noise=alls=12:allf=t" -frames:v 1 -q:v 3 "$TMP/src/12mp.jpg"
ffmpeg -nostdin -v error -y -f lavfi -i "testsrc2=s=1280x720:r=30:d=10" -f lavfi -i "sine=d=10" -c:v libx264 -preset veryfast -pix_fmt yuv420p -c:a aac "$TMP/src/clip.mp4"
ls -l "$TMP/src" >&2

SERVERS="hoard"
if [[ -d $COPYPARTY_SRC/copyparty ]]; then
    SERVERS="hoard copyparty"
    if "$PY" -c 'import PIL' 2>/dev/null; then CPP_DEC=pillow
    elif "$PY" -c 'import pyvips' 2>/dev/null; then CPP_DEC=pyvips
    else CPP_DEC=ffmpeg; fi
    echo "copyparty's image thumbnailer here: $CPP_DEC" >&2
else
    echo "no copyparty at $COPYPARTY_SRC; hoard only" >&2
fi

for s in $SERVERS; do
    mkdir -p "$TMP/vol-$s"
    PORT[$s]=$(freeport)
    case $s in
    hoard) "$HOARD_BIN" -p "${PORT[$s]}" -i 127.0.0.1 --th-mt "$CONC" -v "$TMP/vol-$s::r" >"$TMP/$s.log" 2>&1 & ;;
    copyparty) (cd "$COPYPARTY_SRC" && exec "$PY" -m copyparty -q -i 127.0.0.1 -p "${PORT[$s]}" --th-mt "$CONC" -v "$TMP/vol-$s::r") >"$TMP/$s.log" 2>&1 & ;;
    esac
    PID[$s]=$!
    for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:${PORT[$s]}/" && break; sleep 0.2; done
done

# fetch SERVER PREFIX N EXT: GET ?th=j of PREFIX0..N-1.EXT, CONC at a time;
# prints files/s; fails if any answer is not a JPEG.
fetch() {
    local s=$1 pre=$2 n=$3 ext=$4 rep=${5:-1} t0 t1
    local args=()
    for k in $(seq "$rep"); do
        for i in $(seq 0 $((n - 1))); do args+=(-o "$TMP/out-$s-$i" "http://127.0.0.1:${PORT[$s]}/$pre$i.$ext?th=j"); done
    done
    t0=$(date +%s.%N)
    # one curl, CONC transfers at a time (no process start per request)
    curl -s --no-progress-meter -Z --parallel-max "$CONC" -w '%{http_code} %{content_type}\n' "${args[@]}" >"$TMP/codes-$s"
    t1=$(date +%s.%N)
    if grep -v '^200 image/jpeg' "$TMP/codes-$s" >&2; then echo "$s: bad answers for $pre" >&2; exit 1; fi
    "$PY" -c "print(f'{$n*$rep/($t1-$t0):.2f}')"
}

declare -A R=()
for r in $(seq "$ROUNDS"); do
    for s in $SERVERS; do
        for i in $(seq 0 $((IMG_N - 1))); do cp "$TMP/src/12mp.jpg" "$TMP/vol-$s/r${r}i$i.jpg"; done
        for i in $(seq 0 $((VID_N - 1))); do cp "$TMP/src/clip.mp4" "$TMP/vol-$s/r${r}v$i.mp4"; done
        cat "$TMP/vol-$s"/r"${r}"* >/dev/null # page cache
        R[$s,img_cold]+="$(fetch "$s" "r${r}i" "$IMG_N" jpg) "
        R[$s,img_hot]+="$(fetch "$s" "r${r}i" "$IMG_N" jpg 25) "
        R[$s,vid_cold]+="$(fetch "$s" "r${r}v" "$VID_N" mp4) "
        R[$s,vid_hot]+="$(fetch "$s" "r${r}v" "$VID_N" mp4 25) "
        echo "round $r $s done" >&2
    done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-10s %14s %14s %14s %14s %10s\n' server "12MP cold/s" "12MP cached/s" "video cold/s" "video cached/s" "peak RSS"
declare -A M=()
for s in $SERVERS; do
    rss=0
    for p in ${PID[$s]} $(pgrep -P "${PID[$s]}" || true); do
        v=$(awk '/VmHWM/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0); rss=$((rss + v))
    done
    for k in img_cold img_hot vid_cold vid_hot; do M[$s,$k]=$(echo "${R[$s,$k]}" | median); done
    printf '%-10s %14s %14s %14s %14s %8d MiB\n' "$s" "${M[$s,img_cold]}" "${M[$s,img_hot]}" "${M[$s,vid_cold]}" "${M[$s,vid_hot]}" $((rss / 1024))
    echo "  all rounds: img cold ${R[$s,img_cold]}| cached ${R[$s,img_hot]}| vid cold ${R[$s,vid_cold]}| cached ${R[$s,vid_hot]}"
done
if [[ $SERVERS == *copyparty* ]]; then
    printf '%-10s' "hoard/cpp"
    for k in img_cold img_hot vid_cold vid_hot; do printf ' %14s' "$("$PY" -c "print(f'{${M[hoard,$k]}/${M[copyparty,$k]}:.2f}x')")"; done
    echo
    echo "(copyparty's image thumbnailer: $CPP_DEC)"
fi
