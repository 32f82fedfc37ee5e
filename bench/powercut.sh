#!/bin/bash
# bench/powercut.sh — the long tier of the power-cut test (issue 19): many
# concurrent small PUTs, replaces, deletes and up2k uploads, the file system
# stopped at random moments as by a power loss (ext4's shutdown ioctl on a
# loop-mounted image, see internal/e2e/powercut_test.go), hoard restarted
# and every acknowledged change checked byte for byte.
#
#   sudo bash bench/powercut.sh [ROUNDS]      # 200 by default; needs root
#
# HOARD_POWERCUT_SEED=N repeats a run; extra arguments after ROUNDS go to
# go test (e.g. -race).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-200}
shift || true
HOARD_POWERCUT_ROUNDS=$rounds go test ./internal/e2e -run '^TestPowerCut$' -count=1 -v -timeout 60m "$@" |
	grep -E '^\s+powercut_test.go|^(ok|FAIL|---|panic)'
