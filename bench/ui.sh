#!/usr/bin/env bash
# ui.sh -- the browser UI in headless Chromium: hashing throughput of one
# Web Worker (WebCrypto and hoard's JavaScript SHA-512), and drop-to-done
# upload time of the same files through hoard's page and copyparty's own
# web UI (run from source).
#
#   COPYPARTY_SRC=/work/peers/copyparty bash bench/ui.sh [full|smoke]
#
# full: a 1 GiB file and 2000 files of 4-64 KiB (dropped apart), 64 MiB
# hashed per measurement, a 10,000-entry folder's page weight and time to
# its whole listing; 3 rounds on fresh servers, hoard and copyparty
# alternating, medians and copyparty/hoard ratios. smoke: 8 MiB, 20 files,
# 8 MiB, 200 entries, 1 round (checks that the harness runs, says nothing
# about speed). The work is internal/e2e's TestUIBench.
# Environment: COPYPARTY_SRC (optional: copyparty is skipped without it),
# PY (python for copyparty), HOARD_CHROMIUM (default: chromium on PATH),
# HOARD_UI_BENCH_VARIANTS (hoard's page again with its uploader's knobs set,
# in the same alternating rounds: "w3=workers:3 c6=conns:6,workers:3").

set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
case ${1:-full} in
full) ;;
smoke) export HOARD_UI_BENCH_BIG=$((8 << 20)) HOARD_UI_BENCH_SMALL=20 HOARD_UI_BENCH_HASH=8 HOARD_UI_BENCH_ENTRIES=200 HOARD_UI_BENCH_ROUNDS=1 ;;
*)
	echo "usage: bench/ui.sh [full|smoke]" >&2
	exit 2
	;;
esac
HOARD_UI_BENCH=1 go test ./internal/e2e -run '^TestUIBench$' -count=1 -v -timeout 2h 2>&1 | grep -E 'hashing|drop to done|round|median|copyparty|^(ok|FAIL|---)'
