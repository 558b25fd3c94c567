#!/usr/bin/env bash
# End-to-end tests of `mxbench ab` (two builds in turn, decided on paired throughput ratios)
# and of `mxbench count`'s and `compare`'s handling of bad input:
# - A/A (the same binary on both sides) is never a regression; the decision line and every
#   round are printed; --format json is github-action-benchmark's shape; md is a table;
#   --keep leaves base.h5 and new.h5 with one run per round.
# - a 30% slowdown (MXBENCH_TEST_SLOWDOWN=0.3 in a wrapper script on the NEW side, which runs
#   mxbench_hooked: mxbench with the test hooks, built beside this test) is a regression
#   (exit 1) at the default 5% threshold. The margin is wide on purpose: this is a test, not
#   the benchmark (scripts/bench-ab-gate.sh measures the 10% case over 20 trials).
#   With 10 rounds the interval's upper end is the 9th largest Walsh average: a regression
#   call survives a round or two that the host disturbs, and A/A needs most rounds below 0.95
#   at once to be called one.
# - bad usage: exit 2 naming the value.
# - the test hooks are in mxbench_hooked only: mxbench holds neither variable's name and says
#   nothing of a bad value of either, which mxbench_hooked refuses.
# usage: test_ab.sh MXBENCH SOURCE_DIR BUILD_DIR
HOOKED=$(cd "${3:?usage: test_ab.sh MXBENCH SOURCE_DIR BUILD_DIR}" && pwd)/mxbench_hooked
. "$(dirname "$0")/e2e-lib.sh" test_ab "${1:?usage: test_ab.sh MXBENCH SOURCE_DIR BUILD_DIR}"
[ -x "$HOOKED" ] || { echo "test_ab: $HOOKED is not built (tests/CMakeLists.txt: mxbench_hooked)"; exit 1; }
CFG=(-- --workload mlp --dataset synthetic --batch 32 --steps 40 --warmup-steps 3 --threads-per-device 1)
printf '#!/bin/sh\nMXBENCH_TEST_SLOWDOWN=0.3 exec "%s" "$@"\n' "$HOOKED" >"$T/slow.sh"
chmod +x "$T/slow.sh"

# ---- the test hooks: in mxbench_hooked, not in mxbench
! grep -qa 'MXBENCH_TEST_SLOW' "$MX" && pass "mxbench holds no test hook variable" ||
    fail "mxbench holds a test hook variable: $(grep -ao 'MXBENCH_TEST_SLOW[A-Z_]*' "$MX" | sort -u | tr '\n' ' ')"
MXBENCH_TEST_SLOWDOWN=2 MXBENCH_TEST_SLOW_GEMM=2 "$MX" info >/dev/null 2>"$T/hooks.err"
! grep -q MXBENCH_TEST "$T/hooks.err" && pass "mxbench ignores the test hook variables" ||
    fail "mxbench reacted to a test hook variable: $(cat "$T/hooks.err")"
MXBENCH_TEST_SLOWDOWN=2 MXBENCH_TEST_SLOW_GEMM=2 "$HOOKED" info >/dev/null 2>"$T/hooks.err"
grep -q "MXBENCH_TEST_SLOWDOWN '2' ignored" "$T/hooks.err" &&
    grep -q "MXBENCH_TEST_SLOW_GEMM '2' ignored" "$T/hooks.err" &&
    pass "mxbench_hooked reads both variables and refuses values out of range" ||
    fail "mxbench_hooked: expected both variables refused: $(cat "$T/hooks.err")"

# ---- A/A, with --keep and every format
"$MX" ab "$MX" "$MX" --rounds 10 --keep "$T" "${CFG[@]}" >"$T/aa.out" 2>"$T/aa.err"
rc=$?
[ $rc -eq 0 ] && pass "A/A: exit 0" || { fail "A/A: exit $rc"; tail -5 "$T/aa.err"; cat "$T/aa.out"; }
sed 's/^/    | /' "$T/aa.out"
grep -qE '^new/base throughput [0-9.]+, 95% interval \[[0-9.]+, [0-9.]+\]: (same|~|improvement) \(threshold 5%\)$' "$T/aa.out" &&
    pass "A/A: the decision line names the ratio, its interval and a verdict other than regression" ||
    fail "A/A: no decision line without a regression"
[ "$(grep -cE '^ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$' "$T/aa.out")" = 10 ] && pass "A/A: 10 rounds listed" ||
    fail "A/A: expected 10 round lines"
[ "$(grep -c '^mxbench ab: round ' "$T/aa.err")" = 10 ] && pass "A/A: a progress line per round on stderr" ||
    fail "A/A: expected 10 progress lines on stderr"
for side in base new; do
    n=$("$MX" report "$T/$side.h5" --format csv 2>/dev/null | tail -n +2 | wc -l)
    [ "$n" = 10 ] && pass "--keep: $side.h5 holds the 10 runs" || fail "--keep: $side.h5 holds $n runs, expected 10"
done
"$MX" ab "$MX" "$MX" --rounds 10 --keep "$T" "${CFG[@]}" >/dev/null 2>"$T/keep.err"
rc=$?
[ $rc -eq 2 ] && grep -q "base.h5 exists" "$T/keep.err" && pass "--keep refuses to overwrite base.h5 (exit 2)" ||
    fail "--keep over existing files: exit $rc: $(cat "$T/keep.err")"

"$MX" ab "$MX" "$MX" --rounds 6 --format json --quiet "${CFG[@]}" >"$T/aa.json" 2>"$T/aa.jerr"
rc=$?
if [ $rc -eq 0 ] && python3 - "$T/aa.json" <<'PY'; then
import json, sys
entries = json.load(open(sys.argv[1]))
assert isinstance(entries, list) and len(entries) == 2, entries
for e in entries:
    assert set(e) >= {"name", "unit", "value"}, e
    assert isinstance(e["value"], (int, float)) and e["value"] > 0, e
assert entries[0]["unit"] == "samples/s" and entries[1]["unit"] == "ratio", entries
PY
    pass "--format json: github-action-benchmark entries (name, unit, value) for throughput and the ratio"
else
    fail "--format json: exit $rc or not the expected shape: $(head -c 400 "$T/aa.json") $(cat "$T/aa.jerr")"
fi
! grep -q "round" "$T/aa.jerr" && pass "--quiet: no round lines on stderr" || fail "--quiet printed: $(head -3 "$T/aa.jerr")"
"$MX" ab "$MX" "$MX" --rounds 6 --format md --quiet "${CFG[@]}" >"$T/aa.md" 2>/dev/null
grep -q '^| config | base samples/s | new samples/s | new/base | 95% CI | verdict |$' "$T/aa.md" &&
    grep -q '^| mlp data/none gpus=1 batch=32 |' "$T/aa.md" && pass "--format md: a table with the configuration" ||
    fail "--format md: $(cat "$T/aa.md")"

# ---- a 30% slowdown on the new side
"$MX" ab "$MX" "$T/slow.sh" --rounds 10 "${CFG[@]}" >"$T/slow.out" 2>"$T/slow.err"
rc=$?
sed 's/^/    | /' "$T/slow.out"
[ $rc -eq 1 ] && grep -qE '^new/base throughput 0\.[5-8][0-9]*, .*: regression' "$T/slow.out" &&
    pass "a 30% slowdown: regression, exit 1, ratio near 0.7" || fail "a 30% slowdown: exit $rc, expected 1 and a regression"

# ---- bad usage and failed runs
bad() { # DESC EXPECTED_TEXT ARGS...
    local desc=$1 want=$2
    shift 2
    "$MX" "$@" >"$T/bad.out" 2>"$T/bad.err"
    local rc=$?
    [ $rc -eq 2 ] && grep -qF -- "$want" "$T/bad.err" && pass "$desc: exit 2 naming '$want'" ||
        fail "$desc: expected exit 2 and '$want' on stderr; saw exit $rc: $(head -3 "$T/bad.err")"
}
bad "a missing binary" "'$T/nope'" ab "$MX" "$T/nope" --rounds 6
bad "--rounds 1" "1 is out of range" ab "$MX" "$MX" --rounds 1
bad "--threshold abc" "'abc'" ab "$MX" "$MX" --threshold abc
bad "--record among the train options" "'--record'" ab "$MX" "$MX" -- --steps 5 --record x.h5
bad "a bad train option" "'nonesuch'" ab "$MX" "$MX" -- --workload nonesuch
printf '#!/bin/sh\necho "this build is broken" >&2\nexit 3\n' >"$T/broken.sh"
chmod +x "$T/broken.sh"
bad "a binary whose runs fail" "this build is broken" ab "$MX" "$T/broken.sh" --rounds 6 "${CFG[@]}"
bad "count --via bogus" "'bogus'" count --via bogus
bad "count --steps 0" "0 is out of range" count --steps 0
bad "count with --steps among the train options" "'--steps'" count -- --steps 5
bad "count with a bad train option" "'nonesuch'" count -- --workload nonesuch

echo "test_ab: $npass passed, $nfail failed"
[ $nfail -eq 0 ]
