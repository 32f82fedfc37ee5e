#!/usr/bin/env bash
# foundation.sh -- side-by-side baseline of hoard vs nginx vs copyparty.
#
# Measures, per server, alternating servers within each round (A B C A B C ...):
#   a. GET of a 1 GiB random file (warm page cache), curl speed_download
#   b. GET of one 4 KiB file, wrk -t2 -c64 -d10s (keep-alive), requests/s
#   c. PUT of the 1 GiB file with curl -T (hoard/copyparty: default checksum
#      and ?ck=no; nginx: dav_methods PUT), MB/s = bytes / curl time_total
#   d. peak RSS (VmHWM, summed over the server's processes) after the run
# and prints the median per server plus the ratios hoard/nginx and
# hoard/copyparty.  See bench/peers.md for how the peers are set up.
#
# Environment (all optional):
#   SERVERS        servers to run, subset of "hoard nginx copyparty" (default: all)
#   COPYPARTY_SRC  path to a checkout of copyparty's source; copyparty is
#                  skipped (with a message) when unset
#   PY             python with jinja2 to run copyparty (default /usr/bin/python3)
#   CPP_CK         yes|no: does this copyparty honour ?ck=no (default: detected
#                  from the source)
#   HOARD_BIN      prebuilt hoard binary (default: go build in the repo root)
#   ROUNDS         rounds (default 3)
#   BIG_MB         size of the big file in MiB (default 1024)
#   SMALL_N        number of 4 KiB files (default 200)
#   WRK_T WRK_C WRK_D   wrk threads/connections/duration (default 2 64 10s)
#   BENCH_TMP      parent dir for test data (default ${TMPDIR:-/tmp}); must be a
#                  real disk, not tmpfs, if PUT figures should mean anything
#   KEEP=1         keep the temp dir (logs) on exit
#   WAIT_QUIET=N   before measuring, wait up to N s for the machine to be idle
#                  (other processes < 10% of all cores over 2 s); default 0
#
# Other work on the machine distorts every figure.  The report therefore
# shows the CPU time used during the measurements by processes that are not
# part of this run ("foreign CPU"), and the hypervisor steal time.
#
# Everything binds 127.0.0.1; all processes started here are stopped and the
# temp dir removed on exit.
set -euo pipefail

T_START=$(date +%s)
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)

SERVERS=${SERVERS:-"hoard nginx copyparty"}
ROUNDS=${ROUNDS:-3}
BIG_MB=${BIG_MB:-1024}
SMALL_N=${SMALL_N:-200}
WRK_T=${WRK_T:-2}
WRK_C=${WRK_C:-64}
WRK_D=${WRK_D:-10s}
PY=${PY:-/usr/bin/python3}
BIG_BYTES=$((BIG_MB * 1024 * 1024))

log() { printf '[%4ds] %s\n' "$(($(date +%s) - T_START))" "$*" >&2; }
die() { log "FATAL: $*"; exit 1; }

# ---------------------------------------------------------------- cleanup
declare -A PID=() PORT=()
TMP=""
cleanup() {
    local rc=$? s p
    trap - EXIT INT TERM
    for s in "${!PID[@]}"; do
        p=${PID[$s]}
        if kill -0 "$p" 2>/dev/null; then
            # nginx: QUIT = graceful stop of master + workers; others: TERM
            if [[ $s == nginx ]]; then kill -QUIT "$p" 2>/dev/null || true
            else kill -TERM "$p" 2>/dev/null || true; fi
        fi
    done
    for s in "${!PID[@]}"; do
        p=${PID[$s]}
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    if [[ -n $TMP && -d $TMP ]]; then
        if [[ ${KEEP:-0} == 1 ]]; then log "kept $TMP"; else rm -rf "$TMP"; fi
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- checks
want() { [[ " $SERVERS " == *" $1 "* ]]; }
for s in $SERVERS; do
    case $s in hoard|nginx|copyparty) ;; *) die "unknown server '$s' in SERVERS";; esac
done
if want copyparty && [[ -z ${COPYPARTY_SRC:-} ]]; then
    log "COPYPARTY_SRC is not set: skipping copyparty"
    SERVERS=$(echo " $SERVERS " | sed 's/ copyparty / /; s/^ *//; s/ *$//')
fi
[[ -n $SERVERS ]] || die "no servers selected"
need=(curl wrk awk sort)
want nginx && need+=(nginx)
want hoard && [[ -z ${HOARD_BIN:-} ]] && need+=(go)
for c in "${need[@]}"; do command -v "$c" >/dev/null || die "missing command: $c"; done
if want copyparty; then
    [[ -f $COPYPARTY_SRC/copyparty/__main__.py ]] || die "COPYPARTY_SRC=$COPYPARTY_SRC is not a copyparty source tree"
    "$PY" -c 'import jinja2' 2>/dev/null || die "$PY cannot import jinja2 (Debian: apt-get install python3-jinja2)"
    if [[ -z ${CPP_CK:-} ]]; then
        if grep -q '"ck"' "$COPYPARTY_SRC/copyparty/httpcli.py"; then CPP_CK=yes; else CPP_CK=no; fi
    fi
fi

TMP=$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/hoard-bench.XXXXXX")
chmod 755 "$TMP"          # nginx workers run as nobody when started by root
DATA=$TMP/data
mkdir -p "$DATA/small" "$TMP/res" "$TMP/log"
chmod 1777 "$DATA" "$DATA/small"

# ---------------------------------------------------------------- test data
log "creating test data in $DATA (${BIG_MB} MiB random + ${SMALL_N} x 4 KiB)"
head -c "$BIG_BYTES" /dev/urandom > "$DATA/big.bin"
head -c $((SMALL_N * 4096)) /dev/urandom | split -b 4096 -d -a 3 - "$DATA/small/f"
chmod 644 "$DATA/big.bin" "$DATA"/small/*
SMALL_FILE=small/f$(printf '%03d' $((SMALL_N / 2)))
cat "$DATA/big.bin" > /dev/null   # warm page cache
sync

free_port() {
    "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_up() { # name port
    local i
    for i in $(seq 300); do
        kill -0 "${PID[$1]}" 2>/dev/null || { tail -n 30 "$TMP/log/$1.log" >&2; die "$1 exited during startup"; }
        if curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$2/$SMALL_FILE"; then return 0; fi
        sleep 0.1
    done
    tail -n 30 "$TMP/log/$1.log" >&2
    die "$1 did not come up on port $2 within 30 s"
}

# ---------------------------------------------------------------- servers
start_hoard() {
    local bin=${HOARD_BIN:-}
    if [[ -z $bin ]]; then
        log "building hoard from $REPO"
        (cd "$REPO" && go build -o "$TMP/hoard" .) || die "go build failed"
        bin=$TMP/hoard
    fi
    PORT[hoard]=$(free_port)
    "$bin" -p "${PORT[hoard]}" -i 127.0.0.1 -v "$DATA::rwd" > "$TMP/log/hoard.log" 2>&1 &
    PID[hoard]=$!
    wait_up hoard "${PORT[hoard]}"
}

start_nginx() {
    local pfx=$TMP/nginx
    mkdir -p "$pfx/body"
    PORT[nginx]=$(free_port)
    cat > "$pfx/nginx.conf" <<EOF
# generated by bench/foundation.sh
worker_processes 2;            # the benchmark machine has 2 cores
daemon off;                    # foreground; the script owns the master pid
pid $pfx/nginx.pid;
error_log $pfx/error.log warn;
events { worker_connections 1024; }
http {
    default_type application/octet-stream;
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 65;          # keep-alive on
    keepalive_requests 1000000;    # do not recycle wrk's connections
    client_body_temp_path $pfx/body;   # same filesystem as root: PUT = rename
    proxy_temp_path $pfx/proxy;
    fastcgi_temp_path $pfx/fastcgi;
    uwsgi_temp_path $pfx/uwsgi;
    scgi_temp_path $pfx/scgi;
    server {
        listen 127.0.0.1:${PORT[nginx]};
        root $DATA;
        location / {
            dav_methods PUT DELETE;
            create_full_put_path on;
            dav_access user:rw group:r all:r;
            client_max_body_size 0;
        }
    }
}
EOF
    nginx -e "$pfx/error.log" -p "$pfx/" -c "$pfx/nginx.conf" > "$TMP/log/nginx.log" 2>&1 &
    PID[nginx]=$!
    wait_up nginx "${PORT[nginx]}"
}

start_copyparty() {
    PORT[copyparty]=$(free_port)
    mkdir -p "$TMP/cpp/cfg" "$TMP/cpp/hist"
    # -q: no per-request logging (nginx has access_log off); --hist keeps
    # copyparty's state out of the shared data folder; --http-only --no-crt:
    # no TLS / no certificate generation; mDNS/SSDP are off unless asked for.
    (cd "$COPYPARTY_SRC" && exec env HOME="$TMP/cpp" XDG_CONFIG_HOME="$TMP/cpp/cfg" LC_ALL=C.UTF-8 \
        "$PY" -m copyparty -i 127.0.0.1 -p "${PORT[copyparty]}" -v "$DATA::rwd" \
        --http-only --no-crt --no-thumb --hist "$TMP/cpp/hist" -q) > "$TMP/log/copyparty.log" 2>&1 &
    PID[copyparty]=$!
    wait_up copyparty "${PORT[copyparty]}"
}

for s in $SERVERS; do
    log "starting $s"
    "start_$s"
    log "$s up: pid ${PID[$s]} port ${PORT[$s]}"
done

# ---------------------------------------------------------------- measurements
rec() { echo "$3" >> "$TMP/res/$1.$2"; }   # metric server value
fail() { echo "$3" >> "$TMP/res/$1.$2.fail"; log "FAIL $1 $2: $3"; }

m_get_big() { # server
    local out code size speed
    out=$(curl -s -o /dev/null --max-time 120 -w '%{http_code} %{size_download} %{speed_download}' \
        "http://127.0.0.1:${PORT[$1]}/big.bin") || true
    read -r code size speed <<<"$out"
    if [[ $code == 200 && $size == "$BIG_BYTES" ]]; then
        rec get_big "$1" "$(awk -v s="$speed" 'BEGIN{printf "%.1f", s/1e6}')"
    else fail get_big "$1" "http=$code size=$size"; fi
}

m_get_small() { # server
    local out rps non2xx
    out=$(wrk -t"$WRK_T" -c"$WRK_C" -d"$WRK_D" "http://127.0.0.1:${PORT[$1]}/$SMALL_FILE" 2>&1) || true
    echo "$out" >> "$TMP/log/wrk.$1.log"
    rps=$(awk '/^Requests\/sec:/{print $2}' <<<"$out")
    non2xx=$(awk '/Non-2xx or 3xx responses:/{print $NF}' <<<"$out")
    if [[ -n $rps && -z $non2xx ]]; then
        rec get_small "$1" "$(awk -v r="$rps" 'BEGIN{printf "%.0f", r}')"
        # socket errors (e.g. timeouts) are reported, the figure is kept
        if grep -q 'Socket errors' <<<"$out"; then
            log "note: wrk against $1: $(grep 'Socket errors' <<<"$out")"
        fi
    else fail get_small "$1" "rps=${rps:-?} non2xx=${non2xx:-0}"; fi
}

# Guest-memory pre-fault, untimed, right before every timed write of the big
# file.  On this kind of VM (Firecracker, free-page reporting) memory that has
# been free for ~2 s is handed back to the host, and writing 1 GiB into the
# page cache then costs up to 5x more (measured: dd 800 vs 4000+ MB/s), so the
# first PUT after an idle phase was penalised by whatever order it ran in.
# Writing and deleting a scratch file of 2x the upload leaves that much freshly
# touched memory free for the PUT that follows immediately.
prefault() {
    dd if=/dev/zero of="$DATA/prefault.tmp" bs=1M count=$((BIG_MB * 2)) status=none
    rm -f "$DATA/prefault.tmp"
}

m_put() { # server metric query round
    local s=$1 metric=$2 q=$3 r=$4 name out code t got
    name=put-$s-$metric-r$r.bin
    rm -f "$DATA/$name"
    prefault
    # "Expect:" disables curl's 100-continue wait, so a server that does not
    # answer 100-continue is not charged curl's 1 s expect timeout.
    out=$(curl -s -o "$TMP/log/put.$s.resp" --max-time 300 -H 'Expect:' -T "$DATA/big.bin" \
        -w '%{http_code} %{time_total}' "http://127.0.0.1:${PORT[$s]}/$name$q") || true
    read -r code t <<<"$out"
    got=$(stat -c %s "$DATA/$name" 2>/dev/null || echo missing)
    if [[ $code =~ ^20[01]$|^204$ && $got == "$BIG_BYTES" ]]; then
        rec "$metric" "$s" "$(awk -v b="$BIG_BYTES" -v t="$t" 'BEGIN{printf "%.1f", b/t/1e6}')"
    else fail "$metric" "$s" "http=$code size_on_disk=$got"; fi
    rm -f "$DATA/$name"
    sync   # flush the upload's dirty pages before the next measurement
}

# Warm-up (untimed): one big GET and one big PUT per server.  The PUT warm-up
# matters on VMs where freshly allocated guest memory is slow on first touch
# (e.g. Firecracker with free-page reporting): the first 1 GiB write into the
# page cache can take ~2x as long as later ones.
m_local_copy() { # machine baseline: copy the big file within the page cache, no network
    local t0 t1
    prefault
    t0=$(date +%s.%N)
    dd if="$DATA/big.bin" of="$DATA/ddcopy.bin" bs=1M status=none
    t1=$(date +%s.%N)
    rec local_copy machine "$(awk -v b="$BIG_BYTES" -v a="$t0" -v z="$t1" 'BEGIN{printf "%.1f", b/(z-a)/1e6}')"
    rm -f "$DATA/ddcopy.bin"
    sync
}

# ---------------------------------------------------------------- interference
CLK_TCK=$(getconf CLK_TCK)
stat_busy() { awk '/^cpu /{print $2+$3+$4+$7+$8, $9}' /proc/stat; }   # busy (user+nice+system+irq+softirq) steal, ticks
busy_pct() { # % of all cores busy over 2 s
    local b0 s0 b1 s1
    read -r b0 s0 < <(stat_busy); sleep 2; read -r b1 s1 < <(stat_busy)
    awk -v d=$((b1 - b0)) -v hz="$CLK_TCK" -v n="$(nproc)" 'BEGIN{printf "%.0f", 100*d/(2*hz*n)}'
}
own_ticks() { # sets OWN: CPU ticks used so far by this script, its reaped children and the servers
    # (must run in the main shell, not in $(...): a subshell's `times` does
    # not include the main shell's reaped children such as wrk and curl)
    local t=0 s p
    times > "$TMP/times"
    t=$(awk -v hz="$CLK_TCK" '{for(i=1;i<=NF;i++){split($i,a,/[ms]/); t+=a[1]*60+a[2]}} END{printf "%d", t*hz}' "$TMP/times")
    for s in "${!PID[@]}"; do
        for p in "${PID[$s]}" $(pgrep -P "${PID[$s]}" || true); do
            t=$((t + $(awk '{print $14+$15+$16+$17}' "/proc/$p/stat" 2>/dev/null || echo 0)))
        done
    done
    OWN=$t
}
if [[ ${WAIT_QUIET:-0} -gt 0 ]]; then
    deadline=$(($(date +%s) + WAIT_QUIET))
    while :; do
        b=$(busy_pct)
        (( b < 10 )) && { log "machine idle (${b}% busy)"; break; }
        (( $(date +%s) >= deadline )) && { log "WARNING: machine still ${b}% busy after ${WAIT_QUIET}s; measuring anyway"; break; }
        log "machine ${b}% busy, waiting"
        sleep 8
    done
fi
log "machine busy before measuring: $(busy_pct)% of $(nproc) cores (this script's servers idle)"
read -r BUSY0 STEAL0 < <(stat_busy)
own_ticks; OWN0=$OWN
T_MEAS0=$(date +%s)

log "warm-up: one untimed ${BIG_MB} MiB GET and PUT per server"
for s in $SERVERS; do
    curl -s -o /dev/null --max-time 120 "http://127.0.0.1:${PORT[$s]}/big.bin" || true
    curl -s -o /dev/null --max-time 300 -H 'Expect:' -T "$DATA/big.bin" \
        "http://127.0.0.1:${PORT[$s]}/warmup-$s.bin" || true
    rm -f "$DATA/warmup-$s.bin"
    sync
done

# Server order rotates every round (A B C, B C A, C A B, ...) so no server
# is always first or last after a phase change.
read -r -a SLIST <<<"$SERVERS"
for r in $(seq "$ROUNDS"); do
    n=${#SLIST[@]}; k=$(( (r - 1) % n ))
    ORDER="${SLIST[*]:k} ${SLIST[*]:0:k}"
    log "round $r/$ROUNDS (order: $ORDER): GET ${BIG_MB} MiB"
    for s in $ORDER; do m_get_big "$s"; done
    log "round $r/$ROUNDS: GET 4 KiB (wrk -t$WRK_T -c$WRK_C -d$WRK_D)"
    for s in $ORDER; do m_get_small "$s"; done
    log "round $r/$ROUNDS: PUT ${BIG_MB} MiB"
    for s in $ORDER; do m_put "$s" put_def "" "$r"; done
    m_local_copy
    for s in $ORDER; do
        case $s in
            hoard) m_put hoard put_nock "?ck=no" "$r" ;;
            copyparty) if [[ $CPP_CK == yes ]]; then m_put copyparty put_nock "?ck=no" "$r"; fi ;;
        esac
    done
done

read -r BUSY1 STEAL1 < <(stat_busy)
own_ticks; OWN1=$OWN
T_MEAS1=$(date +%s)
BUSY_S=$(awk -v b=$((BUSY1 - BUSY0)) -v hz="$CLK_TCK" 'BEGIN{printf "%.1f", b/hz}')
OWN_S=$(awk -v o=$((OWN1 - OWN0)) -v hz="$CLK_TCK" 'BEGIN{printf "%.1f", o/hz}')
FOREIGN=$(awk -v b="$BUSY_S" -v o="$OWN_S" 'BEGIN{printf "%.1f", b-o}')   # ~0 (+-few s) on a quiet machine
STEAL=$(awk -v s=$((STEAL1 - STEAL0)) -v hz="$CLK_TCK" 'BEGIN{printf "%.1f", s/hz}')
WALL=$((T_MEAS1 - T_MEAS0))

# ---------------------------------------------------------------- peak RSS
rss_kib() { # pid -> sum of VmHWM over pid and its children
    local p sum=0 v
    for p in "$1" $(pgrep -P "$1" || true); do
        v=$(awk '/^VmHWM:/{print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
        sum=$((sum + ${v:-0}))
    done
    echo "$sum"
}
for s in $SERVERS; do
    kill -0 "${PID[$s]}" 2>/dev/null || { fail rss "$s" "process gone"; continue; }
    rec rss "$s" "$(awk -v k="$(rss_kib "${PID[$s]}")" 'BEGIN{printf "%.1f", k/1024}')"
done

# ---------------------------------------------------------------- report
median() { # file -> median or "-"
    [[ -s $1 ]] || { echo "-"; return; }
    sort -g "$1" | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'
}
cell() { # metric server
    local f=$TMP/res/$1.$2
    # nginx has no checksum: its single PUT figure is shown in both PUT rows
    [[ $1 == put_nock && $2 == nginx ]] && f=$TMP/res/put_def.nginx
    if [[ -s $f ]]; then median "$f"
    elif [[ -s $f.fail ]]; then echo "FAIL"
    else echo "-"; fi
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a+0>0 && b+0>0) printf "%.2f", a/b; else print "-" }'; }

declare -A LABEL=(
    [get_big]="GET ${BIG_MB} MiB, MB/s"
    [get_small]="GET 4 KiB, req/s"
    [put_def]="PUT ${BIG_MB} MiB default ck, MB/s"
    [put_nock]="PUT ${BIG_MB} MiB ?ck=no, MB/s"
    [rss]="peak RSS, MiB"
)
cols=(hoard nginx copyparty)
echo
echo "== hoard foundation benchmark: $ROUNDS rounds, median per server =="
echo "host: $(nproc) cpu, $(awk -F': ' '/^model name/{print $2; exit}' /proc/cpuinfo), kernel $(uname -r)"
[[ " $SERVERS " == *" copyparty "* ]] && echo "copyparty: $(cd "$COPYPARTY_SRC" && "$PY" -c 'from copyparty.__version__ import S_VERSION as v; print(v)' 2>/dev/null) via $PY; honours ?ck=no: $CPP_CK"
printf '%-30s %10s %10s %10s %12s %16s\n' metric hoard nginx copyparty hoard/nginx hoard/copyparty
for m in get_big get_small put_def put_nock rss; do
    declare -A v=()
    for s in "${cols[@]}"; do
        if want "$s"; then v[$s]=$(cell "$m" "$s"); else v[$s]="n/a"; fi
    done
    printf '%-30s %10s %10s %10s %12s %16s\n' "${LABEL[$m]}" "${v[hoard]}" "${v[nginx]}" "${v[copyparty]}" \
        "$(ratio "${v[hoard]}" "${v[nginx]}")" "$(ratio "${v[hoard]}" "${v[copyparty]}")"
    unset v
done
echo
echo "machine baselines (no HTTP):"
printf '  %-58s %10s\n' "page-cache copy of the ${BIG_MB} MiB file, dd bs=1M, MB/s (median)" "$(median "$TMP/res/local_copy.machine")"
if command -v openssl >/dev/null; then
    sha=$(openssl speed -evp sha512 -seconds 2 -bytes 16384 2>/dev/null | awk '$1=="sha512"{v=$NF; sub(/k$/,"",v); printf "%.0f", v*1000/1e6}')
    printf '  %-58s %10s\n' "SHA-512 one core, openssl speed -evp sha512, 16 KiB, MB/s" "${sha:--}"
fi
echo "  loopback reference: the nginx column (sendfile GET, plain PUT)"
echo "  interference during the ${WALL} s of measurements ($((WALL * $(nproc))) core-s): CPU busy ${BUSY_S} s, of which this run ${OWN_S} s;"
echo "    foreign CPU ${FOREIGN} s (other processes and kernel threads; ~0 +- a few s = quiet machine), steal ${STEAL} s"
echo "  every timed PUT and the dd copy follow an untimed 2x${BIG_MB} MiB memory pre-fault (see prefault())"
echo
echo "notes: MB = 10^6 bytes. nginx PUT (dav_methods PUT, no checksum) is shown in both PUT rows."
echo "       copyparty ?ck=no row is '-' when that copyparty version has no ck selector."
echo "       peak RSS = VmHWM summed over the server process and its children (nginx: master + 2 workers)."
echo "       wrk and the server share the same $(nproc) cores."
echo
echo "raw values per round (in run order):"
for f in "$TMP"/res/*; do
    printf '  %-28s %s\n' "$(basename "$f")" "$(tr '\n' ' ' < "$f")"
done
log "done in $(($(date +%s) - T_START)) s"
