#!/usr/bin/env bash
# End-to-end tests of what the results store means for the CLI: `train --record` never
# overwrites a file without --force; `sweep --resume` (and a fresh sweep) removes what killed
# sweeps left beside the file, and only that; `mxbench report` shows the per-device and the
# global batch, "none" as the kvstore of one-device rows (old files too), and diverged and
# failed rows with their reason, the same in text, md, csv and json; a dist_* run's worker and
# server counts, its oversubscription and its rank table (csv with --ranks), where a straggler
# shows.
# usage: test_results_cli.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u

MX=${1:?usage: test_results_cli.sh MXBENCH SOURCE_DIR BUILD_DIR}
BUILD=${3:?usage: test_results_cli.sh MXBENCH SOURCE_DIR BUILD_DIR}
case $MX in /*) ;; *) MX=$PWD/$MX ;; esac
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
FIXTURE=$BUILD/make_report_fixture
[ -x "$MX" ] || { echo "test_results_cli: mxbench binary '$MX' is missing or not executable"; exit 1; }
[ -x "$FIXTURE" ] || { echo "test_results_cli: '$FIXTURE' is missing (built with the tests: cmake --build)"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/mxbench-test_results_cli.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

npass=0 nfail=0
pass() { npass=$((npass + 1)); echo "ok: $*"; }
fail() { nfail=$((nfail + 1)); echo "FAIL: $*"; }
TRAIN=(train --workload mlp --dataset synthetic --steps 3 --batch 16 --threads-per-device 1 --quiet)

# ---- train --record: an existing file is refused (exit 2, naming it) unless --force
echo "precious, not a results file" >"$T/precious.txt"
for target in precious.txt; do
    "$MX" "${TRAIN[@]}" --record "$T/$target" >"$T/o" 2>"$T/e"
    rc=$?
    [ $rc -eq 2 ] && grep -qF "$T/$target" "$T/e" && grep -q -- "--force" "$T/e" &&
        pass "train --record over an existing $target: exit 2 naming the file and --force" ||
        fail "train --record over $target: expected exit 2 naming the file and --force, saw $rc: $(cat "$T/e")"
    grep -qx "precious, not a results file" "$T/$target" && pass "the existing $target is untouched" ||
        fail "train --record changed the existing $target"
done
"$MX" "${TRAIN[@]}" --record "$T/new.h5" >"$T/o" 2>"$T/e" && "$MX" report "$T/new.h5" >/dev/null 2>&1 &&
    pass "train --record to a new file writes it" || fail "train --record to a new file: $(cat "$T/e")"
"$MX" "${TRAIN[@]}" --record "$T/new.h5" >"$T/o" 2>"$T/e"
rc=$?
[ $rc -eq 2 ] && "$MX" report "$T/new.h5" >/dev/null 2>&1 && pass "a second train --record to the same file: exit 2, the first kept" ||
    fail "second train --record to new.h5: expected exit 2 and the file kept, saw $rc: $(cat "$T/e")"
"$MX" "${TRAIN[@]}" --record "$T/precious.txt" --force >"$T/o" 2>"$T/e" && "$MX" report "$T/precious.txt" >/dev/null 2>&1 &&
    pass "train --record --force overwrites it" || fail "train --record --force: $(cat "$T/e")"
mkdir "$T/adir"
"$MX" "${TRAIN[@]}" --record "$T/adir" >"$T/o" 2>"$T/e"
rc=$?
[ $rc -eq 2 ] && [ -d "$T/adir" ] && pass "train --record onto a directory: exit 2, the directory kept" ||
    fail "train --record onto a directory: expected exit 2, saw $rc: $(cat "$T/e")"

# ---- sweep: leftovers of killed sweeps are removed when their process is gone, and only then
S=(sweep --workload mlp --dataset synthetic --steps 4 --warmup-steps 1 --batch 16 --gpus 1 --threads-per-device 1)
"$MX" "${S[@]}" --out "$T/s.h5" >"$T/o" 2>"$T/e" || fail "sweep --out s.h5: $(tail -3 "$T/e")"
sh -c 'exit 0' &
dead=$!
wait $dead # a pid whose process is gone
sleep 100 &
alive=$!
for f in "s.h5.run-$dead.h5" "s.h5.tmp-$dead" "s.h5.run-$dead.h5.tmp-$dead" "s.h5.run-$alive.h5" "s.h5.tmp-$alive" \
    "s.h5.run-x.h5" "other.h5.run-$dead.h5"; do echo leftover >"$T/$f"; done
"$MX" "${S[@]}" --gpus 1,2 --out "$T/s.h5" --resume >"$T/o" 2>"$T/e"
rc=$?
[ $rc -eq 0 ] && pass "sweep --resume beside leftovers: exit 0" || fail "sweep --resume: exit $rc: $(tail -3 "$T/e")"
for f in "s.h5.run-$dead.h5" "s.h5.tmp-$dead" "s.h5.run-$dead.h5.tmp-$dead"; do
    [ ! -e "$T/$f" ] && grep -q "removed $T/$f, left by process $dead" "$T/e" &&
        pass "--resume removed $f (process gone) and said so" || fail "--resume: $f still there or not reported"
done
for f in "s.h5.run-$alive.h5" "s.h5.tmp-$alive" "s.h5.run-x.h5" "other.h5.run-$dead.h5"; do
    [ -e "$T/$f" ] && pass "--resume kept $f (process alive, or not a leftover of s.h5)" ||
        fail "--resume removed $f, which is not a leftover of a finished process"
done
kill "$alive" 2>/dev/null
wait "$alive" 2>/dev/null
echo leftover >"$T/s.h5.run-$dead.h5"
"$MX" "${S[@]}" --out "$T/s.h5" --force >"$T/o" 2>"$T/e"
[ ! -e "$T/s.h5.run-$dead.h5" ] && [ ! -e "$T/s.h5.run-$alive.h5" ] && pass "a fresh sweep (--force) removes them too" ||
    fail "sweep --force left $(ls "$T" | grep 's.h5.run-' | tr '\n' ' ')"

# ---- report: batch per device and global, kvstore none for one device, diverged with reason
"$FIXTURE" "$T/rep.h5" || fail "make_report_fixture rep.h5: exit $?"
"$MX" report "$T/rep.h5" >"$T/rep.txt" 2>"$T/e" || fail "report rep.h5: exit $?: $(cat "$T/e")"
# the table follows the answer: its head is the line naming the columns
grep -q "gpus  batch/dev  global  kvstore" "$T/rep.txt" && pass "text: batch/dev and global columns" ||
    fail "text: expected 'gpus  batch/dev  global  kvstore' in the table's head: $(head -20 "$T/rep.txt")"
row() { awk -v id="$2" '$1 == id' "$1"; }
row "$T/rep.txt" r0000 | grep -Eq '^r0000 +mlp +data +1 +32 +32 +none ' && pass "text: one-device row of an old file shows kvstore none" ||
    fail "text r0000: expected '1 32 32 none', saw: $(row "$T/rep.txt" r0000)"
row "$T/rep.txt" r0001 | grep -Eq ' 2 +32 +64 +device ' && pass "text: global batch 64 on 2 devices is 32 per device" ||
    fail "text r0001: expected '2 32 64 device', saw: $(row "$T/rep.txt" r0001)"
row "$T/rep.txt" r0002 | grep -q "diverged .*loss inf at step 9" && pass "text: the diverged row shows its reason" ||
    fail "text r0002: expected status diverged and its reason, saw: $(row "$T/rep.txt" r0002)"
row "$T/rep.txt" r0003 | grep -q "failed .*exit status 1" && pass "text: the failed row shows its reason" ||
    fail "text r0003: expected status failed and its reason, saw: $(row "$T/rep.txt" r0003)"
"$MX" report "$T/rep.h5" --format md >"$T/rep.md" 2>"$T/e"
grep -q '^| id | workload | strategy | gpus | batch/dev | global | kvstore |' "$T/rep.md" &&
    grep -q '^| r0000 | mlp | data | 1 | 32 | 32 | none |' "$T/rep.md" && grep -q '^| r0002 .* diverged .*loss inf' "$T/rep.md" &&
    pass "md: the same columns and cells" || { fail "md: columns or cells differ from the text table:"; cat "$T/rep.md"; }
"$MX" report "$T/rep.h5" --format csv >"$T/rep.csv" 2>"$T/e"
csvcol() { # FILE ID NAME: a cell of the csv report
    awk -F, -v id="\"$2\"" -v name="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next }
                                         $1 == id && c { v = $c; gsub(/"/, "", v); print v }' "$1"
}
[ "$(csvcol "$T/rep.csv" r0000 kvstore)" = none ] && [ "$(csvcol "$T/rep.csv" r0000 batch_per_device)" = 32 ] &&
    [ "$(csvcol "$T/rep.csv" r0001 batch_per_device)" = 32 ] && [ "$(csvcol "$T/rep.csv" r0001 global_batch)" = 64 ] &&
    [ "$(csvcol "$T/rep.csv" r0002 status)" = diverged ] && pass "csv: kvstore none, batch_per_device, global_batch, diverged" ||
    { fail "csv: cells differ from the text table:"; cat "$T/rep.csv"; }
"$MX" report "$T/rep.h5" --format json >"$T/rep.json" 2>"$T/e"
if command -v python3 >/dev/null 2>&1; then
    got=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["runs"]
print(r[0]["kvstore"], r[0]["batch_per_device"], r[1]["batch_per_device"], r[1]["global_batch"], r[2]["status"], r[2]["reason"][:8])' "$T/rep.json" 2>&1)
    [ "$got" = "none 32 32 64 diverged loss inf" ] && pass "json: the same values" || fail "json: expected 'none 32 32 64 diverged loss inf', saw '$got'"
else
    grep -q '"kvstore": "none"' "$T/rep.json" && pass "json: kvstore none (no python3 to check more)" || fail "json: no kvstore none"
fi

# ---- report: a dist_* run (r0004: dist_sync, 2 workers, 1 server, oversubscribed; worker 1
# takes 25 ms a step where worker 0 takes 10: 1.43x the median of the workers' 17.5 ms)
row "$T/rep.txt" r0004 | grep -Eq ' 2 +32 +64 +dist_sync +2 +1 .*oversubscribed' &&
    pass "text: the dist_* row shows its kvstore, 2 workers, 1 server and the oversubscription" ||
    fail "text r0004: expected 'dist_sync 2 1 ... oversubscribed', saw: $(row "$T/rep.txt" r0004)"
row "$T/rep.txt" r0000 | grep -Eq ' none +1 +0 ' && pass "text: a single-process row shows 1 worker, 0 servers" ||
    fail "text r0000: expected 'none 1 0', saw: $(row "$T/rep.txt" r0000)"
ranks=$(sed -n '/^ranks of r0004/,/^$/p' "$T/rep.txt")
echo "$ranks" | grep -q "kvstore dist_sync, 2 workers, 1 server; oversubscribed" &&
    echo "$ranks" | grep -Eq '^ +1 +node-b +worker +12 +25\.00 +30\.00 +50\.00 +1\.43x +2 +1\.00 +5\.00 +-$' &&
    echo "$ranks" | grep -Eq '^ +2 +node-a +server +0 +- +- +- +- +4 +- +- +3\.00$' &&
    pass "text: the rank table of r0004, the straggler at 1.43x the median" ||
    { fail "text: rank table of r0004:"; echo "$ranks"; }
grep -q '^#### Ranks of `r0004`' "$T/rep.md" && grep -q '^| 1 | node-b | worker | 12 | 25.00 | 30.00 | 50.00 | 1.43x |' "$T/rep.md" &&
    pass "md: the rank table" || { fail "md: no rank table of r0004:"; cat "$T/rep.md"; }
[ "$(csvcol "$T/rep.csv" r0004 workers)" = 2 ] && [ "$(csvcol "$T/rep.csv" r0004 servers)" = 1 ] &&
    [ "$(csvcol "$T/rep.csv" r0004 oversubscribed)" = 1 ] && [ "$(csvcol "$T/rep.csv" r0004 nranks)" = 3 ] &&
    [ "$(csvcol "$T/rep.csv" r0000 workers)" = 1 ] && pass "csv: workers, servers, oversubscribed, nranks" ||
    fail "csv: r0004 has workers '$(csvcol "$T/rep.csv" r0004 workers)', nranks '$(csvcol "$T/rep.csv" r0004 nranks)'"
"$MX" report "$T/rep.h5" --format csv --ranks >"$T/ranks.csv" 2>"$T/e"
[ "$(head -1 "$T/ranks.csv")" = "id,rank,host,role,steps,step_min,step_median,step_p90,step_max,bytes_per_step,push_time,pull_time,busy_time" ] &&
    [ "$(wc -l <"$T/ranks.csv")" -eq 4 ] && grep -qx '"r0004",1,"node-b","worker",12,0.02,0.025,0.03,0.05,2e+06,0.001,0.005,' "$T/ranks.csv" &&
    pass "csv --ranks: one row per rank" || { fail "csv --ranks:"; cat "$T/ranks.csv" "$T/e"; }
if command -v python3 >/dev/null 2>&1; then
    got=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["runs"]
print(r[0]["ranks"], r[4]["workers"], r[4]["servers"], r[4]["oversubscribed"], len(r[4]["ranks"]), r[4]["ranks"][1]["step_median"], r[4]["ranks"][2]["role"], r[4]["ranks"][2]["push_time"])' "$T/rep.json" 2>&1)
    [ "$got" = "[] 2 1 1 3 0.025 server None" ] && pass "json: processes and the rank table" ||
        fail "json: expected '[] 2 1 1 3 0.025 server None', saw '$got'"
fi

# A file on which libhdf5 1.10.8 itself crashes (found by fuzzing raw bytes of a results
# file): read in a child process first, so every reader refuses it (exit 2) instead of dying.
# Whether the library crashes or reports an error on it depends on the process's memory
# layout (linked with CUDA's libraries, the same read returns an error): either way the file
# is refused with exit 2 and a message naming it.
SRC=${2:?usage: test_results_cli.sh MXBENCH SOURCE_DIR BUILD_DIR}
for cmd in "report" "compare $SRC/tests/data/hdf5_crash.h5" "plot"; do
    # shellcheck disable=SC2086
    "$MX" $cmd "$SRC/tests/data/hdf5_crash.h5" >"$T/o" 2>"$T/e"
    rc=$?
    [ $rc -eq 2 ] && grep -q "hdf5_crash.h5.*\(HDF5 library crashed on it\|cannot be read\)" "$T/e" &&
        pass "${cmd%% *} of a file that crashes libhdf5: exit 2, named" ||
        fail "${cmd%% *} of a file that crashes libhdf5: expected exit 2 and a message, saw $rc: $(head -2 "$T/e")"
done

echo "test_results_cli: $npass passed, $nfail failed"
[ $nfail -eq 0 ]
