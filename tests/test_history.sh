#!/usr/bin/env bash
# End-to-end tests of `mxbench history`, results files followed across revisions:
# - five files "from five revisions" (make_history_fixture: throughputs within 1.5% of one
#   another, 95% intervals of about +-2%) with a 10% throughput loss injected into one
#   configuration at revision 3, given out of order: the table names that revision and
#   configuration with its ratio and interval, the data file marks exactly that point (and the
#   improvement across a gap), the figures and a self-contained page exist, exit 0 (the newest
#   revision did not regress); the same loss at revision 5: exit 1, named;
# - real runs: three tiny sweeps of one build, the third under MXBENCH_TEST_SLOWDOWN=0.6
#   (mxbench_hooked: 2.5 times slower), relabelled as revisions: exit 1 and the slowed point
#   marked. A 10% loss is left to the fixture: two sweeps of one build on this shared VM differ
#   by up to 30% (test_compare_cli.sh), so no gate on separate jobs can see 10% here;
# - bad input: one file, an unreadable file, a bad threshold or metric, files with nothing in
#   common: exit 2 naming the value.
# usage: test_history.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u

MX=${1:?usage: test_history.sh MXBENCH SOURCE_DIR BUILD_DIR}
BUILD=${3:?usage: test_history.sh MXBENCH SOURCE_DIR BUILD_DIR}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
FIX=$BUILD/make_history_fixture
HOOKED=$BUILD/mxbench_hooked
for b in "$FIX" "$HOOKED"; do
    [ -x "$b" ] || { echo "test_history: '$b' is missing (built with the tests: cmake --build)"; exit 1; }
done
# shellcheck source=tests/e2e-lib.sh
. "${2:?usage: test_history.sh MXBENCH SOURCE_DIR BUILD_DIR}/tests/e2e-lib.sh" test_history "$MX"
have_gnuplot=1
command -v gnuplot >/dev/null 2>&1 || { have_gnuplot=0; echo "note: gnuplot not found: figures not checked"; }

A=aaaaaaaaaaaa B=bbbbbbbbbbbb C=cccccccccccc D=dddddddddddd E=eeeeeeeeeeee
REG="mlp data/device gpus=2 batch=32"

# the rows of a data file whose verdict (column 5) is V, as "block-title revision" lines
marked() { # FILE V
    awk -v v="$2" '/^"/ { title = $0; gsub(/"/, "", title); next }
                   !/^#/ && NF >= 6 && $5 == v { print title " " $6 }' "$1"
}

# ---- the regression in the middle (revision 3), files given out of order
mkdir -p mid last
"$FIX" synth "$T/mid" 3 || { fail "make_history_fixture synth mid 3: exit $?"; exit 1; }
if mx_expect mid 0 "history with a regression at revision 3 of 5 (newest fine)" history \
    mid/rev4.h5 mid/rev1.h5 mid/rev5.h5 mid/rev3.h5 mid/rev2.h5 --out "$T/mid/out"; then
    order=$(awk '/^ +[0-9]+  [a-e]+ /{ printf "%s ", $2 }' mid.out)
    [ "$order" = "$A $B $C $D $E " ] && pass "revisions in time order whatever the order given" ||
        fail "revisions out of order: '$order'"
    line=$(grep -F "  $REG: throughput at $C against $B: ratio " mid.out)
    [ -n "$line" ] && echo "$line" | grep -qE "ratio 0\.8[0-9]+ \[0\.8[0-9]+, 0\.9[0-4][0-9]*\]" &&
        pass "the table names the regression: $line" ||
        { fail "no line naming '$REG' at $C against $B with a ratio near 0.9 and its interval:"; indent mid.out; }
    [ "$(grep -c ": throughput at .* ratio " mid.out)" = 2 ] &&
        grep -qF "lenet data/none gpus=1 batch=32: throughput at $D against $B" mid.out &&
        pass "one other throughput change: lenet's improvement at $D, judged against $B across the gap" ||
        { fail "expected exactly the regression and lenet's improvement at $D against $B:"; indent mid.out; }
    grep -q "^newest revision $E: no regression" mid.out && pass "the newest revision is said to be fine" ||
        fail "missing 'newest revision $E: no regression'"
fi
if [ $have_gnuplot = 1 ]; then
    for f in history.png history.svg history_instructions.png history_instructions.svg; do
        [ -s "mid/out/$f" ] || fail "figure mid/out/$f missing or empty"
    done
    [ -s mid/out/history.png ] && [ -s mid/out/history_instructions.svg ] && pass "both figures, PNG and SVG"
    got=$(marked mid/out/data/history.dat 2)
    [ "$got" = "$REG $C" ] && pass "the throughput data marks exactly one regression: $got" ||
        fail "data/history.dat: regressions marked '$got', expected '$REG $C'"
    got=$(marked mid/out/data/history.dat 3)
    [ "$got" = "lenet data/none gpus=1 batch=32 $D" ] && pass "and exactly one improvement: $got" ||
        fail "data/history.dat: improvements marked '$got'"
    [ "$(marked mid/out/data/history_instructions.dat 2)" = "$REG $C" ] &&
        pass "the instruction counts mark the same point (10% more instructions)" ||
        fail "data/history_instructions.dat: regressions '$(marked mid/out/data/history_instructions.dat 2)'"
    grep -q "regression (vs. previous point)" mid/out/history.svg && grep -q "improvement" mid/out/history.svg &&
        pass "the SVG's key names the regression and improvement marks" ||
        fail "history.svg: no 'regression' / 'improvement' in the key"
else
    grep -q "no figures: gnuplot not found" mid.err && pass "without gnuplot: said, no figures" ||
        fail "without gnuplot: expected 'no figures: gnuplot not found' on stderr"
fi
page=mid/out/history.html
if [ -s "$page" ]; then
    pass "the page exists"
    grep -qiE "(src|href)=\"?(https?:)?//|https?://" "$page" && fail "the page refers to the network: $(grep -oiE "https?://[^\"' ]*" "$page" | head -3)" ||
        pass "the page is self-contained (no http reference)"
    grep -q "<tr class=\"bad\"><td>$REG</td><td>throughput</td><td>$C</td><td>$B</td>" "$page" &&
        pass "the page's table of changes names the regression" || fail "the page does not list the regression at $C"
    [ $have_gnuplot = 0 ] || [ "$(grep -c 'src="data:image/svg+xml;base64,' "$page")" = 2 ] &&
        pass "the figures are inline" || fail "expected 2 inline SVG figures in the page"
else
    fail "no page at $page"
fi

# ---- the regression in the newest revision: exit 1, named
"$FIX" synth "$T/last" 5 || fail "make_history_fixture synth last 5: exit $?"
if mx_expect last 1 "history with a regression at the newest revision: exit 1" history last/rev*.h5; then
    grep -qF "  $REG: throughput at $E against $D: ratio 0.8" last.out &&
        grep -q "^newest revision $E: 2 regressions against the previous point" last.out &&
        pass "the newest revision's regression is named (throughput and instructions)" ||
        { fail "expected '$REG: throughput at $E against $D' and 'newest revision $E: 2 regressions':"; indent last.out; }
    [ -s last/history/history.html ] && pass "default --out: history/ beside the first file" ||
        fail "no last/history/history.html (the default output folder)"
fi
mx_expect lastthr 1 "--metric throughput alone: exit 1" history last/rev*.h5 --metric throughput --out "$T/o1"
mx_expect lastth 0 "--threshold 15% tolerates the 10% loss: exit 0" history last/rev*.h5 --threshold 15% --out "$T/o2"

# ---- real runs: the third 2.5 times slower (MXBENCH_TEST_SLOWDOWN=0.6)
real_ok=1
for i in 1 2 3; do
    slow=
    [ $i = 3 ] && slow=0.6
    MXBENCH_TEST_SLOWDOWN=$slow "$HOOKED" sweep --workload mlp --dataset synthetic --gpus 1 --batch 32 --steps 150 \
        --out "$T/run$i.h5" >"$T/run$i.log" 2>&1 || { fail "real sweep $i: exit $?: $(tail -3 "$T/run$i.log")"; real_ok=0; }
    "$FIX" relabel "$T/run$i.h5" "$T/real$i.h5" "$(printf '%s%039d' $i 0)" "2026-04-0${i}T08:00:00Z" ||
        { fail "relabel run$i: exit $?"; real_ok=0; }
done
if [ $real_ok = 1 ] && mx_expect real 1 "real runs, the newest 2.5 times slower: exit 1" history real3.h5 real1.h5 \
    real2.h5 --out "$T/realout"; then
    grep -qF ": throughput at 300000000000 against 200000000000: ratio 0." real.out &&
        pass "the slowed revision is named" || { fail "the slowed revision is not named:"; indent real.out; }
    [ $have_gnuplot = 0 ] || { marked realout/data/history.dat 2 | grep -q " 300000000000$" &&
        pass "the slowed point is marked in the data" || fail "realout/data/history.dat does not mark 300000000000"; }
fi

# ---- bad input: exit 2, naming the value
if mx_expect one 2 "a single file" history mid/rev1.h5; then
    grep -q "needs at least two results files.*given 1: mid/rev1.h5" one.err && pass "the message says two are needed" ||
        { fail "one file: message:"; indent one.err; }
fi
echo "not hdf5" >"$T/bad.h5"
mx_expect unreadable 2 "a file that is not a results file" history mid/rev1.h5 "$T/bad.h5" &&
    { grep -qF "$T/bad.h5" unreadable.err && pass "the message names the file" || fail "unreadable: $(cat unreadable.err)"; }
mx_expect missing 2 "a missing file" history mid/rev1.h5 "$T/nope.h5" &&
    { grep -qF "$T/nope.h5" missing.err && pass "the message names the missing file" || fail "missing: $(cat missing.err)"; }
for th in abc 150% -1 1.5; do
    mx_expect th 2 "--threshold $th" history mid/rev1.h5 mid/rev2.h5 --threshold "$th" &&
        { grep -qF -- "'$th'" th.err && pass "--threshold $th named" || fail "--threshold $th: $(cat th.err)"; }
done
mx_expect metric 2 "--metric speed" history mid/rev1.h5 mid/rev2.h5 --metric speed &&
    { grep -qF "speed" metric.err && grep -q "throughput" metric.err && pass "--metric speed named, choices listed" ||
          fail "--metric speed: $(cat metric.err)"; }
mx_expect nocount 2 "--metric instructions on files without counts" history real1.h5 real2.h5 --metric instructions \
    --out "$T/o3" && { grep -q "none of the 2 files has instruction counts" nocount.err && pass "said why" ||
                           fail "nocount: $(cat nocount.err)"; }
"$MX" sweep --workload lenet --dataset synthetic --gpus 1 --batch 32 --steps 12 --out "$T/other.h5" >/dev/null 2>&1 ||
    fail "sweep other.h5: exit $?"
mx_expect disjoint 2 "files with no configuration in common" history real1.h5 other.h5 --out "$T/o4" &&
    { grep -q "nothing judged" disjoint.err && pass "said: nothing judged" || fail "disjoint: $(cat disjoint.err)"; }

echo "test_history: $npass passed, $nfail failed"
[ $nfail -eq 0 ]
