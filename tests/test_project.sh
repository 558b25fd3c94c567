#!/usr/bin/env bash
# End-to-end tests of `mxbench project`: a tiny sweep (mlp on 1, 2 and 4 CPU workers, a few
# steps) projected with --fit 1,2 --gpus 4,8 --plot: the table has a fitted row for 1 and 2
# devices, a checked (held-out) row for 4 and a predicted row for 8, with the fit in words;
# csv and json hold the same points; the figures are PNG and SVG files with their data;
# bad input (a missing file, --gpus 0, --gpus abc, --fit 3, a file measured on one device
# count, --format xml) exits 2 naming the value. It checks the structure, never how close a
# prediction of these few noisy steps comes: that is a measurement (docs/projection.md).
# usage: test_project.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u

MX=${1:?usage: test_project.sh MXBENCH SOURCE_DIR BUILD_DIR}
# shellcheck source=tests/e2e-lib.sh
. "${2:?usage: test_project.sh MXBENCH SOURCE_DIR BUILD_DIR}/tests/e2e-lib.sh" test_project "$MX"

# project_run EXPECTED_EXIT DESC ARGS...: runs `mxbench project ARGS`, output in $T/p.out/err.
project_run() {
    local want=$1 desc=$2
    shift 2
    mx_expect p "$want" "$desc" project "$@"
}

STUDY=(--workload mlp --dataset synthetic --batch 32 --steps 30 --kvstore device)
"$MX" sweep "${STUDY[@]}" --gpus 1,2,4 --out "$T/S.h5" >"$T/S.log" 2>&1 ||
    { fail "sweep --gpus 1,2,4: exit $?"; tail -5 "$T/S.log"; echo "test_project: $npass passed, $nfail failed"; exit 1; }

# ---- the table
if project_run 0 "project --fit 1,2 --gpus 4,8 --plot" "$T/S.h5" --fit 1,2 --gpus 4,8 --plot "$T/fig"; then
    row() { awk -v g="$1" '$1 == g { print; exit }' "$T/p.out"; }
    r1=$(row 1) r2=$(row 2) r4=$(row 4) r8=$(row 8)
    case "$r1|$r2|$r4|$r8" in
    *" fit "*"|"*" fit "*"|"*" check "*"|"*" - "*) pass "rows: 1 and 2 fitted, 4 checked, 8 predicted" ;;
    *) fail "expected rows 1 fit, 2 fit, 4 check, 8 -; saw:"; indent "$T/p.out" ;;
    esac
    # gpus runs fit samples/s model error ...: the model has a number everywhere, the error only where measured
    echo "$r4" | awk '{ exit !($4 > 0 && $5 > 0 && $6 ~ /%$/) }' && echo "$r8" | awk '{ exit !($4 == "-" && $5 > 0 && $6 == "-") }' &&
        pass "4 devices: measured, modelled and their error; 8: the model alone" ||
        { fail "rows 4 and 8: expected numbers, an error in % at 4 and none at 8:"; indent "$T/p.out"; }
    for want in "fitted on 1, 2 devices" "alpha" "beta" "gamma" "2 cores, 1 thread per device"; do
        grep -q -- "$want" "$T/p.out" && pass "the fit says '$want'" || { fail "no '$want' in:"; indent "$T/p.out"; }
    done
    for f in project_throughput project_efficiency; do
        if [ -s "$T/fig/$f.png" ] && head -c 8 "$T/fig/$f.png" | od -An -c | grep -q "P   N   G" &&
            grep -q "<svg" "$T/fig/$f.svg" 2>/dev/null; then
            pass "$f.png is a PNG and $f.svg an SVG"
        else
            fail "$f: expected a PNG and an SVG in $T/fig: $(ls -l "$T/fig" 2>&1)"
        fi
        grep -q "$f.png" "$T/p.err" || fail "stderr does not name $f.png: $(cat "$T/p.err")"
    done
    # the data: one block of measured points (4 of them, 1 and 2 fitted, 4 held out) and the model's line
    [ "$(awk 'NF == 4 && $4 == 1' "$T/fig/data/project.dat" | wc -l)" = 2 ] &&
        [ "$(awk 'NF == 4 && $4 == 0' "$T/fig/data/project.dat" | wc -l)" = 1 ] &&
        [ "$(awk 'NF == 4 && $4 == -1 && ($1 == 1 || $1 == 4 || $1 == 8)' "$T/fig/data/project.dat" | wc -l)" = 3 ] &&
        [ -x "$T/fig/data/replot.sh" ] &&
        pass "data/project.dat: 2 fitted points, 1 held out, the model's line from 1 to 8 devices; replot.sh" ||
        { fail "data/project.dat not as expected:"; indent "$T/fig/data/project.dat"; }
fi

# ---- csv and json: the same points
if project_run 0 "project --format csv" "$T/S.h5" --fit 1,2 --gpus 4,8 --format csv; then
    [ "$(head -1 "$T/p.out" | cut -d, -f1-7)" = "configuration,gpus,runs,fitted,throughput,model_throughput,error" ] &&
        [ "$(tail -n +2 "$T/p.out" | wc -l)" = 4 ] && pass "csv: a header and one row per device count (1, 2, 4, 8)" ||
        { fail "csv: expected the header and 4 rows:"; indent "$T/p.out"; }
fi
if project_run 0 "project --format json" "$T/S.h5" --fit 1,2 --gpus 4,8 --format json; then
    if python3 - "$T/p.out" <<'PY'; then
import json, sys
doc = json.load(open(sys.argv[1]))
(c,) = doc["configurations"]
assert c["skipped"] == "" and c["fit_gpus"] == [1, 2], c
for k in ("alpha", "beta", "gamma", "exposed", "overlap", "c0", "c1", "d0", "d1"):
    assert k in c["fit"], k
pts = {p["gpus"]: p for p in c["points"]}
assert sorted(pts) == [1, 2, 4, 8], pts
assert pts[1]["fitted"] and pts[2]["fitted"] and not pts[4]["fitted"] and pts[4]["runs"] == 1, pts
assert pts[8]["runs"] == 0 and pts[8]["throughput"] is None and pts[8]["model_throughput"] > 0, pts[8]
assert pts[4]["error"] is not None and pts[8]["error"] is None, pts
PY
        pass "json: the fit's parameters and the points 1, 2 (fitted), 4 (held out), 8 (predicted)"
    else
        fail "json: not the expected document:"
        indent "$T/p.out"
    fi
fi
project_run 0 "project --help" --help && grep -q -- "--fit LIST" "$T/p.out" && grep -q "alpha" "$T/p.out" &&
    pass "--help documents --fit and the model" || fail "--help: $(head -3 "$T/p.out")"

# ---- bad input: exit 2, the value named, nothing on stdout
bad() { # DESC WANT_IN_STDERR ARGS...
    local desc=$1 want=$2
    shift 2
    if project_run 2 "$desc" "$@"; then
        grep -qF -- "$want" "$T/p.err" && [ ! -s "$T/p.out" ] && pass "$desc: the message names '$want'" ||
            { fail "$desc: expected '$want' on stderr and nothing on stdout:"; indent "$T/p.out" "$T/p.err"; }
    fi
}
bad "a missing file" "$T/missing.h5" "$T/missing.h5"
bad "--gpus 0" "0 in '0' is out of range; accepted 1..65536" "$T/S.h5" --gpus 0
bad "--gpus abc" "'abc'" "$T/S.h5" --gpus abc
bad "--fit 3" "--fit 3: no ok run has 3 devices (measured: 1, 2, 4)" "$T/S.h5" --fit 3
bad "--format xml" "'xml'" "$T/S.h5" --format xml
"$MX" sweep "${STUDY[@]}" --gpus 2 --out "$T/one.h5" >"$T/one.log" 2>&1 || fail "sweep --gpus 2: exit $?"
bad "a file of one device count" "fitted on one device count (2): the model needs two" "$T/one.h5"

echo "test_project: $npass passed, $nfail failed"
[ $nfail -eq 0 ]
