#!/usr/bin/env bash
# A busy host is noticed: `mxbench train` beside two
# programs spinning on the cores records the run noisy, with the threads of other programs
# ready to run and the load, says so in its summary line and its progress lines, and the
# report's note and CSV columns carry it. (That a quiet host reads quiet is not asserted:
# CI's host may run anything beside the test; tests/test_hostload.c checks the readings.)
# usage: test_noisy.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u
MX=${1:?usage: test_noisy.sh MXBENCH SOURCE_DIR BUILD_DIR}
# shellcheck source=tests/e2e-lib.sh
. "${2:?usage: test_noisy.sh MXBENCH SOURCE_DIR BUILD_DIR}/tests/e2e-lib.sh" test_noisy "$MX"

spinners=()
for _ in 1 2; do
    sh -c 'while :; do :; done' &
    spinners+=($!)
done
trap 'kill "${spinners[@]}" 2>/dev/null; rm -rf "$T"' EXIT
sleep 0.3

MXBENCH_PROGRESS_SECONDS=0 run busy "$MX" train --workload mlp --dataset synthetic --steps 150 --batch 64 \
    --record "$T/busy.h5"
kill "${spinners[@]}" 2>/dev/null
noisy=$(attr "$T/busy.h5" noisy) others=$(attr "$T/busy.h5" host_others) load=$(attr "$T/busy.h5" host_load)
[ "$noisy" = 1 ] && awk -v o="$others" 'BEGIN { exit !(o >= 0.5) }' &&
    pass "beside two spinning programs: noisy, $others threads of other programs ready to run, load $load" ||
    fail "beside two spinning programs: noisy '$noisy', host_others '$others', host_load '$load'"
grep -q "NOISY host" "$T/busy.out" && pass "the summary line says NOISY host" ||
    fail "no 'NOISY host' in: $(tail -1 "$T/busy.out")"
grep -q "host busy: [0-9]* thread" "$T/busy.err" "$T/busy.out" && pass "a progress line says the host is busy" ||
    fail "no progress line says 'host busy' ($(grep -c step "$T/busy.err") progress lines)"
"$MX" report "$T/busy.h5" >"$T/report.txt" 2>&1 && grep -q "noisy: other programs competed" "$T/report.txt" &&
    pass "the report's note says noisy" || fail "report: $(head -5 "$T/report.txt")"
csv=$("$MX" report "$T/busy.h5" --format csv 2>/dev/null)
col=$(echo "$csv" | head -1 | tr ',' '\n' | grep -n '^noisy$' | cut -d: -f1)
[ -n "$col" ] && [ "$(echo "$csv" | sed -n 2p | cut -d, -f"$col")" = 1 ] && pass "the CSV's noisy column is 1" ||
    fail "CSV noisy column '$col': $(echo "$csv" | sed -n 2p | cut -c1-120)"

echo "test_noisy: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
