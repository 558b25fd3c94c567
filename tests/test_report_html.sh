#!/usr/bin/env bash
# End-to-end tests of `mxbench report FILE --format html`: on the report fixture (five rows: a
# diverged and a failed one, a dist_sync run with its rank table) and on a tiny real sweep,
# the page is one self-contained file (no http:// or https:// reference, nothing else written
# beside it, the figures' temporary directory gone) holding the answer before the first
# figure, one inline SVG per figure `mxbench plot` draws, the rank table, every run id, and
# class "bad" on the rows not ok; without gnuplot the page is still written and says so; a bad
# --out (a directory) exits 2 and leaves the page there before intact, as a file that is not
# a results file does; --out with another format, and a bad --format, exit 2.
# usage: test_report_html.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u
BUILD=${3:?usage: test_report_html.sh MXBENCH SOURCE_DIR BUILD_DIR}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
# shellcheck source=tests/e2e-lib.sh
. "${2:?usage: test_report_html.sh MXBENCH SOURCE_DIR BUILD_DIR}/tests/e2e-lib.sh" test_report_html "${1:-}"
FIXTURE=$BUILD/make_report_fixture
[ -x "$FIXTURE" ] || { echo "test_report_html: '$FIXTURE' is missing (built with the tests: cmake --build)"; exit 1; }
command -v gnuplot >/dev/null || { echo "test_report_html: gnuplot not found (apt-get install gnuplot-nox)"; exit 77; }
mkdir -p "$T/tmp"
export TMPDIR=$T/tmp # the figures' temporary directories: each must be gone after a page

# check_page PAGE H5 NAME: the checks every page must pass
check_page() {
    local page=$1 h5=$2 name=$3
    [ -s "$page" ] && pass "$name: the page exists" || { fail "$name: no page at $page"; return; }
    ! grep -qiE 'https?://' "$page" && pass "$name: no http:// or https:// reference" ||
        fail "$name: references the network: $(grep -oiE '.{30}https?://.{30}' "$page" | head -2)"
    ! grep -qiE '<(link|script|iframe)[^>]* (src|href)=' "$page" && pass "$name: no external script or style" ||
        fail "$name: loads a file: $(grep -oiE '<(link|script|iframe)[^>]* (src|href)=[^>]*' "$page" | head -2)"
    ! grep -oE 'src="[^"]*"' "$page" | grep -qv '^src="data:' && pass "$name: every src is inline data" ||
        fail "$name: a src not inline: $(grep -oE 'src="[^"]{0,60}' "$page" | grep -v '^src="data:' | head -2)"
    [ -z "$(ls -A "$T/tmp")" ] && pass "$name: the figures' temporary directory is removed" ||
        fail "$name: left in \$TMPDIR: $(ls -A "$T/tmp")"
    # the answer before the first figure
    local answer figure
    answer=$(grep -bo 'class="answer"' "$page" | head -1 | cut -d: -f1)
    figure=$(grep -bo '<figure' "$page" | head -1 | cut -d: -f1)
    [ -n "$answer" ] && [ -n "$figure" ] && [ "$answer" -lt "$figure" ] && pass "$name: the answer comes before the figures" ||
        fail "$name: answer at byte ${answer:-none}, first figure at ${figure:-none}"
    grep -q '<div class="answer">' "$page" && grep -A3 '<div class="answer">' "$page" | grep -q '<p' &&
        pass "$name: the answer has its paragraphs" || fail "$name: the answer has no paragraph"
    # one inline SVG per figure mxbench plot draws from the same file
    "$MX" plot "$h5" --out "$T/plots-$name" >"$T/plot-$name.out" 2>"$T/plot-$name.err"
    local want got
    want=$(grep -c '\.svg$' "$T/plot-$name.out")
    got=$(grep -o '<img[^>]* src="data:image/svg+xml;base64,' "$page" | wc -l)
    [ "$want" -gt 0 ] && [ "$got" -eq "$want" ] && pass "$name: $got inline SVG figures, as many as mxbench plot draws" ||
        fail "$name: $got inline SVG figures, mxbench plot drew $want"
    # each inline figure decodes to an SVG
    local bad=0 n=0
    while read -r b64; do
        n=$((n + 1))
        printf '%s' "$b64" | base64 -d 2>/dev/null | grep -q '<svg' || bad=$((bad + 1))
    done < <(grep -o 'data:image/svg+xml;base64,[A-Za-z0-9+/=]*' "$page" | sed 's/^data:image\/svg+xml;base64,//')
    [ "$n" -gt 0 ] && [ "$bad" -eq 0 ] && pass "$name: the $n figures decode to SVG" || fail "$name: $bad of $n figures do not decode"
    # every run id, in the full table
    local ids missing=""
    ids=$("$MX" report "$h5" --format csv | awk -F, 'NR > 1 {gsub(/"/, "", $1); print $1}')
    for id in $ids; do grep -q "<td>$id</td>" "$page" || missing="$missing $id"; done
    [ -n "$ids" ] && [ -z "$missing" ] && pass "$name: every run id ($(echo $ids | wc -w)) is on the page" ||
        fail "$name: run ids missing:$missing"
    grep -q '<table class="sortable">' "$page" && pass "$name: sortable tables" || fail "$name: no sortable table"
}

# ---- the fixture: five rows, a diverged and a failed one, a dist_sync run with its ranks
"$FIXTURE" "$T/fx.h5" || fail "make_report_fixture fx.h5: exit $?"
mx_expect default 0 "--format html, the default path" report "$T/fx.h5" --format html
[ "$(cat "$T/default.out")" = "report: $T/fx.html" ] && pass "prints report: PAGE (FILE.h5 -> FILE.html)" ||
    fail "stdout: $(cat "$T/default.out")"
[ "$(ls "$T" | grep -c html)" -eq 1 ] && pass "one file: nothing written beside the page" ||
    fail "beside the page: $(ls "$T")"
check_page "$T/fx.html" "$T/fx.h5" fixture
grep -q '<tr class="bad"><td>r0002</td>' "$T/fx.html" && grep -q '<tr class="bad"><td>r0003</td>' "$T/fx.html" &&
    pass "the diverged and the failed row are of class bad" || fail "no class bad on r0002 or r0003"
! grep -q '<tr class="bad"><td>r0001</td>' "$T/fx.html" && pass "an ok row is not bad" || fail "r0001 of class bad"
grep -q 'Ranks of r0004' "$T/fx.html" && grep -q '<th class="num">min ms</th>' "$T/fx.html" &&
    pass "the rank table of the dist_sync run, with each rank's shortest step" || fail "no rank table for r0004"
grep -q '<tr class="win">' "$T/fx.html" && pass "the winner's row is marked (class win)" || fail "no row of class win"
grep -q 'oversubscribed' "$T/fx.html" && pass "the oversubscribed run says so" || fail "oversubscribed not said"

# ---- without gnuplot: still a page, saying why it has no figure
PATH=/nonexistent "$MX" report "$T/fx.h5" --format html --out "$T/nognuplot/page.html" >"$T/nog.out" 2>"$T/nog.err"
rc=$?
[ $rc -eq 0 ] && [ -s "$T/nognuplot/page.html" ] && pass "without gnuplot: exit 0, the page written" ||
    fail "without gnuplot: exit $rc: $(cat "$T/nog.err")"
grep -q 'gnuplot not found' "$T/nognuplot/page.html" && ! grep -q '<figure' "$T/nognuplot/page.html" &&
    pass "without gnuplot: the page says gnuplot is missing, no figure" || fail "without gnuplot: the page does not say so"
grep -q 'gnuplot not found' "$T/nog.err" && pass "without gnuplot: said on stderr too" || fail "stderr: $(cat "$T/nog.err")"

# ---- bad usage: nothing replaced
cp "$T/fx.html" "$T/before.html"
mkdir -p "$T/adir"
mx_expect outdir 2 "--out a directory" report "$T/fx.h5" --format html --out "$T/adir"
grep -q -- "--out" "$T/outdir.err" && grep -q "directory" "$T/outdir.err" && pass "the message names --out and why" ||
    fail "message: $(cat "$T/outdir.err")"
cmp -s "$T/fx.html" "$T/before.html" && [ -d "$T/adir" ] && [ -z "$(ls -A "$T/adir")" ] &&
    pass "a bad --out leaves the page there before and the directory as they were" || fail "a bad --out changed something"
echo "not a results file" >"$T/bad.h5"
mx_expect notresults 2 "a file that is not a results file" report "$T/bad.h5" --format html --out "$T/fx.html"
cmp -s "$T/fx.html" "$T/before.html" && pass "the page there before stays when the input is bad" ||
    fail "the page was changed by a failed report"
[ -z "$(ls "$T" | grep '\.tmp-')" ] && pass "no temporary page left" || fail "left: $(ls "$T" | grep '\.tmp-')"
mx_expect outtext 2 "--out with --format text" report "$T/fx.h5" --format text --out "$T/x.html"
grep -q "html" "$T/outtext.err" && [ ! -e "$T/x.html" ] && pass "says --out is for html, writes nothing" ||
    fail "message: $(cat "$T/outtext.err")"
mx_expect badfmt 2 "--format pdf" report "$T/fx.h5" --format pdf
grep -q "pdf" "$T/badfmt.err" && grep -q "html" "$T/badfmt.err" && pass "names the bad value and the accepted ones" ||
    fail "message: $(cat "$T/badfmt.err")"

# ---- a tiny real sweep: data-parallel on 1 and 2 devices
if run sweep "$MX" sweep --strategies data --gpus 1,2 --workload mlp --dataset synthetic --steps 6 --warmup-steps 1 \
    --batch 16 --threads-per-device 1 --out "$T/sweep/s.h5"; then
    mx_expect sweeppage 0 "a real sweep's page" report "$T/sweep/s.h5" --format html --out "$T/sweep/page/report.html"
    check_page "$T/sweep/page/report.html" "$T/sweep/s.h5" sweep
    [ "$(ls "$T/sweep/page")" = report.html ] && pass "sweep: the page's folder holds the page alone" ||
        fail "sweep: beside the page: $(ls "$T/sweep/page")"
fi

echo "test_report_html: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
