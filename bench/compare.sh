#!/usr/bin/env bash
# compare.sh -- hoard against nginx and copyparty with the Go harness.
#
# Makes the fixtures in a temporary folder (go run ./bench -prepare), starts
# nginx (sendfile, dav_methods PUT DELETE MKCOL COPY MOVE: no PROPFIND, so
# dav-propfind and rclone-sync are unsupported there) and copyparty (from source, -e2dsa, so it
# indexes the fixtures for search) on free 127.0.0.1 ports, all serving that
# folder, then runs
#     go run ./bench -dir DATA -compare 'hoard=spawn,nginx=URL,copyparty=URL' -pid ...
# with the arguments given to this script (e.g. -rounds 3 -limits -json), and
# stops everything and removes the folder at the end. See bench/peers.md.
#
#   COPYPARTY_SRC=/work/peers/copyparty bash bench/compare.sh -rounds 3 -limits
#
# Environment: COPYPARTY_SRC (required for copyparty; skipped when unset),
# PY (python with jinja2, default /usr/bin/python3), BENCH_TMP (parent of
# the data folder; a real disk, default ${TMPDIR:-/tmp}), PEERS (default
# "nginx copyparty"; add "gobare" for the bare net/http ceiling,
# bench/barehttp). Sizes: pass -big, -small-n, -search-n ... both to the
# prepare step and the run: this script passes all its arguments to both.
#
# HOARD_TAGS=pprof builds the spawned hoard with net/http/pprof; it serves
# it on HOARD_PPROF (say 127.0.0.1:6061) for a profile during a run.
#
# Variants (environment, any together):
#   ACCESSLOG=1  adds hoard-quiet, a hoard with --log-level warn (no access
#                log), beside the spawned hoard (info: one access line per
#                request):      ACCESSLOG=1 PEERS= bash bench/compare.sh -scenario get-small
#   CKNO=1       adds hoard-ckno, a hoard whose volume has put_ck=no (a PUT
#                is not hashed): CKNO=1 bash bench/compare.sh -scenario put-large
#   TLS=1        makes a certificate (openssl) and adds hoard-tls (hoard
#                --https-only with it) and, with COPYPARTY_SRC, copyparty-tls
#                (copyparty --https-only --cert): the harness speaks HTTP/1.1
#                over TLS to them, unverified (a local server).
#                TLS=1 COPYPARTY_SRC=... bash bench/compare.sh -scenario get-large,up2k-large
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PY:-/usr/bin/python3}
PEERS=${PEERS-"nginx copyparty"} # PEERS= (empty): hoard alone
log() { printf '[compare] %s\n' "$*" >&2; }

TMP=$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/hoard-compare.XXXXXX")
chmod 755 "$TMP"
DATA=$TMP/data
mkdir -p "$DATA" "$TMP/log"
chmod 1777 "$DATA"
declare -A PID=()
cleanup() {
    local rc=$? s
    trap - EXIT INT TERM
    for s in "${!PID[@]}"; do
        if [[ $s == nginx ]]; then kill -QUIT "${PID[$s]}" 2>/dev/null || true
        else kill -TERM "${PID[$s]}" 2>/dev/null || true; fi
    done
    for s in "${!PID[@]}"; do
        for _ in $(seq 50); do kill -0 "${PID[$s]}" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "${PID[$s]}" 2>/dev/null || true
        wait "${PID[$s]}" 2>/dev/null || true
    done
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_up() { # name port [scheme]
    for _ in $(seq 600); do
        kill -0 "${PID[$1]}" 2>/dev/null || { tail -n 30 "$TMP/log/$1.log" >&2; log "$1 exited"; exit 1; }
        curl -sk -o /dev/null --max-time 2 "${3:-http}://127.0.0.1:$2/hb-fix/manifest.txt" && return 0
        sleep 0.1
    done
    log "$1 did not come up"; exit 1
}

cd "$REPO"
go build -o "$TMP/bench" ./bench
go build ${HOARD_TAGS:+-tags $HOARD_TAGS} -o "$TMP/hoard" .   # the spawned hoard and the variants' are this one
log "fixtures in $DATA"
"$TMP/bench" -prepare -dir "$DATA" "$@"
chmod -R a+rX "$DATA"

TARGETS="hoard=spawn"
PIDS=""
if [[ " $PEERS " == *" nginx "* ]]; then
    P=$TMP/nginx; mkdir -p "$P/body"; PORT=$(free_port)
    cat > "$P/nginx.conf" <<EOF
worker_processes 2;
daemon off;
pid $P/nginx.pid;
error_log $P/error.log warn;
events { worker_connections 1024; }
http {
    default_type application/octet-stream;
    access_log off;
    sendfile on;
    tcp_nopush off;   # on: 40 ms stalls on keep-alive range replies (sendfile + TCP_CORK), measured
    tcp_nodelay on;
    keepalive_timeout 65;
    keepalive_requests 1000000;
    client_body_temp_path $P/body;
    proxy_temp_path $P/proxy;
    fastcgi_temp_path $P/fastcgi;
    uwsgi_temp_path $P/uwsgi;
    scgi_temp_path $P/scgi;
    server {
        listen 127.0.0.1:$PORT;
        root $DATA;
        location / {
            dav_methods PUT DELETE MKCOL COPY MOVE;
            create_full_put_path on;
            dav_access user:rw group:r all:r;
            client_max_body_size 0;
        }
    }
}
EOF
    nginx -e "$P/error.log" -p "$P/" -c "$P/nginx.conf" > "$TMP/log/nginx.log" 2>&1 &
    PID[nginx]=$!
    wait_up nginx "$PORT"
    TARGETS+=",nginx=http://127.0.0.1:$PORT"; PIDS+="nginx=${PID[nginx]},"
    log "nginx $(nginx -v 2>&1 | sed 's/.*\///') on $PORT, pid ${PID[nginx]}"
fi
if [[ " $PEERS " == *" copyparty "* ]]; then
    if [[ -z ${COPYPARTY_SRC:-} ]]; then
        log "COPYPARTY_SRC unset: no copyparty"
    else
        PORT=$(free_port); mkdir -p "$TMP/cpp/cfg" "$TMP/cpp/hist"
        (cd "$COPYPARTY_SRC" && exec env HOME="$TMP/cpp" XDG_CONFIG_HOME="$TMP/cpp/cfg" LC_ALL=C.UTF-8 \
            "$PY" -m copyparty -i 127.0.0.1 -p "$PORT" -v "$DATA::rwmd" -e2dsa \
            --http-only --no-crt --no-thumb --hist "$TMP/cpp/hist" -q) > "$TMP/log/copyparty.log" 2>&1 &
        PID[copyparty]=$!
        wait_up copyparty "$PORT"
        TARGETS+=",copyparty=http://127.0.0.1:$PORT"; PIDS+="copyparty=${PID[copyparty]},"
        log "copyparty $(cd "$COPYPARTY_SRC" && "$PY" -c 'from copyparty.__version__ import S_VERSION as v; print(v)') on $PORT, pid ${PID[copyparty]}"
    fi
fi
if [[ " $PEERS " == *" gobare "* ]]; then
    # The ceiling of Go's net/http here (bench/barehttp): small files from
    # memory, ranges by http.ServeContent. It answers only GET/HEAD; the
    # other scenarios report it as "unsupported".
    go build -o "$TMP/barehttp" ./bench/barehttp
    PORT=$(free_port)
    "$TMP/barehttp" -p "$PORT" -dir "$DATA" > "$TMP/log/gobare.log" 2>&1 &
    PID[gobare]=$!
    wait_up gobare "$PORT"
    TARGETS+=",gobare=http://127.0.0.1:$PORT"; PIDS+="gobare=${PID[gobare]},"
    log "gobare (bare net/http) on $PORT, pid ${PID[gobare]}"
fi
# start_hoard NAME SCHEME FLAGS...: another hoard on the data, as the
# harness spawns it (-e2dsa, its own --hist), with FLAGS (and the volume
# flags VF, comma-separated, when set).
start_hoard() {
    local name=$1 scheme=$2 port; shift 2
    port=$(free_port); mkdir -p "$TMP/$name"
    "$TMP/hoard" -p "$port" -i 127.0.0.1 -v "$DATA::rwmd${VF:+:c,$VF}" -e2dsa -hist "$TMP/$name" "$@" > "$TMP/log/$name.log" 2>&1 &
    PID[$name]=$!
    wait_up "$name" "$port" "$scheme"
    TARGETS+=",$name=$scheme://127.0.0.1:$port"; PIDS+="$name=${PID[$name]},"
    log "$name on $port ($*), pid ${PID[$name]}"
}
if [[ ${ACCESSLOG:-} == 1 ]]; then
    start_hoard hoard-quiet http --log-level warn
fi
if [[ ${CKNO:-} == 1 ]]; then
    VF=put_ck=no start_hoard hoard-ckno http   # log line shows no flags: VF is on the -v line
fi
if [[ ${TLS:-} == 1 ]]; then
    mkdir -p "$TMP/tls"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=127.0.0.1 \
        -addext subjectAltName=IP:127.0.0.1 -keyout "$TMP/tls/key.pem" -out "$TMP/tls/cert.pem" 2>/dev/null
    cat "$TMP/tls/key.pem" "$TMP/tls/cert.pem" > "$TMP/tls/both.pem"   # copyparty wants one file, key first
    start_hoard hoard-tls https --cert "$TMP/tls/cert.pem" --key "$TMP/tls/key.pem" --https-only
    if [[ -n ${COPYPARTY_SRC:-} && " $PEERS " == *" copyparty "* ]]; then
        PORT=$(free_port); mkdir -p "$TMP/cpt/cfg" "$TMP/cpt/hist"
        (cd "$COPYPARTY_SRC" && exec env HOME="$TMP/cpt" XDG_CONFIG_HOME="$TMP/cpt/cfg" LC_ALL=C.UTF-8 \
            "$PY" -m copyparty -i 127.0.0.1 -p "$PORT" -v "$DATA::rwmd" -e2dsa \
            --https-only --cert "$TMP/tls/both.pem" --no-thumb --hist "$TMP/cpt/hist" -q) > "$TMP/log/copyparty-tls.log" 2>&1 &
        PID[copyparty-tls]=$!
        wait_up copyparty-tls "$PORT" https
        TARGETS+=",copyparty-tls=https://127.0.0.1:$PORT"; PIDS+="copyparty-tls=${PID[copyparty-tls]},"
        log "copyparty-tls on $PORT, pid ${PID[copyparty-tls]}"
    fi
fi
log "running: bench -dir DATA -compare '$TARGETS' -pid '${PIDS%,}' $*"
"$TMP/bench" -dir "$DATA" -compare "$TARGETS" ${PIDS:+-pid "${PIDS%,}"} -hoard-bin "$TMP/hoard" "$@"
