#!/usr/bin/env bash
# s3.sh -- hoard on a volume on S3 (MinIO) beside the same on a local
# volume and beside a direct S3 client (minio-go) moving the same bytes to
# and from the same MinIO: put-large, get-large, up2k-large (hoard up) and
# tar (docs/s3.md, issue 21). Alternating rounds, medians, ratios to the
# direct client, CPU seconds per GB of hoard and of MinIO.
#
#   bash bench/s3.sh                      # 1 GiB, 3 rounds
#   bash bench/s3.sh -size 4G -rounds 5   # arguments go to bench/s3bench
#   bash bench/s3.sh -size 8M -rounds 1   # a smoke run
#
# It starts MinIO (the binary .ci/run builds, or $HOARD_MINIO) as a 4-drive
# erasure set with MINIO_CI_CD=on on a free loopback port, its drives and
# hoard's local volume below $BENCH_TMP (default ${TMPDIR:-/tmp}: use a real
# disk), one hoard serving /s3 (c,s3=bench/vol) and /loc, runs
# `go run ./bench/s3bench`, and removes everything at the end.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf '[s3] %s\n' "$*" >&2; }
MINIO=${HOARD_MINIO:-$(command -v minio || echo "${XDG_CACHE_HOME:-$HOME/.cache}/hoard-ci/bin/minio")}
[ -x "$MINIO" ] || { log "no MinIO binary at $MINIO: run .ci/run or set HOARD_MINIO"; exit 1; }

TMP=$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/hoard-s3bench.XXXXXX")
declare -A PID=()
cleanup() {
    local rc=$? s
    trap - EXIT INT TERM
    for s in "${!PID[@]}"; do kill -TERM "${PID[$s]}" 2>/dev/null || true; done
    for s in "${!PID[@]}"; do
        for _ in $(seq 100); do kill -0 "${PID[$s]}" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "${PID[$s]}" 2>/dev/null || true
        wait "${PID[$s]}" 2>/dev/null || true
    done
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

cd "$REPO"
go build -o "$TMP/hoard" .
go build -o "$TMP/s3bench" ./bench/s3bench

export AWS_ACCESS_KEY_ID=hoardbench AWS_SECRET_ACCESS_KEY=hoardbench-secret AWS_REGION=us-east-1
MPORT=$(free_port)
mkdir -p "$TMP"/minio/d{1,2,3,4} "$TMP/loc" "$TMP/state"
MINIO_CI_CD=on MINIO_ROOT_USER=$AWS_ACCESS_KEY_ID MINIO_ROOT_PASSWORD=$AWS_SECRET_ACCESS_KEY MINIO_BROWSER=off MINIO_UPDATE=off \
    "$MINIO" server --quiet --address "127.0.0.1:$MPORT" --console-address "127.0.0.1:$(free_port)" "$TMP/minio/d{1...4}" >"$TMP/minio.log" 2>&1 &
PID[minio]=$!
for _ in $(seq 600); do
    curl -sf -o /dev/null "http://127.0.0.1:$MPORT/minio/health/ready" && break
    kill -0 "${PID[minio]}" 2>/dev/null || { cat "$TMP/minio.log" >&2; log "minio exited"; exit 1; }
    sleep 0.1
done
"$TMP/s3bench" -endpoint "127.0.0.1:$MPORT" -bucket bench -make-bucket -hoard x
export AWS_ENDPOINT_URL=http://127.0.0.1:$MPORT

"$TMP/hoard" -p 0 -i 127.0.0.1 --log-level warn -v "$TMP/loc:loc:rwmd" -v "$TMP/state:s3:rwmd:c,s3=bench/vol" >"$TMP/hoard.log" 2>&1 &
PID[hoard]=$!
URL=
for _ in $(seq 300); do
    URL=$(grep -om1 'listening on http://[0-9.:]*' "$TMP/hoard.log" | cut -d' ' -f3 || true)
    [ -n "$URL" ] && break
    kill -0 "${PID[hoard]}" 2>/dev/null || { cat "$TMP/hoard.log" >&2; log "hoard exited"; exit 1; }
    sleep 0.1
done
[ -n "$URL" ] || { log "hoard did not come up"; exit 1; }
log "MinIO at 127.0.0.1:$MPORT (pid ${PID[minio]}), hoard at $URL (pid ${PID[hoard]}), data in $TMP"

"$TMP/s3bench" -hoard "$URL" -endpoint "127.0.0.1:$MPORT" -bucket bench -prefix vol \
    -hoard-bin "$TMP/hoard" -hoard-pid "${PID[hoard]}" -minio-pids "${PID[minio]}" "$@"
