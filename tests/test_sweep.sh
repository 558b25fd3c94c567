#!/usr/bin/env bash
# End-to-end tests of `mxbench sweep` and the readers of its file: the /summary table and
# the run groups as h5dump sees them, ok and skipped rows, every report format, crash safety
# (kill -9 mid-sweep, then --resume), SIGTERM, no overwrite without --force, plots, and the
# per-run --timeout.
# usage: test_sweep.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u

MX=${1:?usage: test_sweep.sh MXBENCH SOURCE_DIR BUILD_DIR}
case $MX in /*) ;; *) MX=$PWD/$MX ;; esac
[ -x "$MX" ] || { echo "test_sweep: mxbench binary '$MX' is missing or not executable"; exit 1; }
command -v h5dump >/dev/null 2>&1 || { echo "test_sweep: h5dump not found (apt-get install hdf5-tools)"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/mxbench-test_sweep.XXXXXX") || exit 1
cleanup() {
    local p
    for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done # a sweep still running in the background
    rm -rf "$T"
}
trap cleanup EXIT
cd "$T" || exit 1

npass=0 nfail=0
pass() { npass=$((npass + 1)); echo "ok: $*"; }
fail() { nfail=$((nfail + 1)); echo "FAIL: $*"; }
section() { echo "---- $* ($(date +%T))"; }

# attr FILE OBJECT NAME: the value of an HDF5 attribute, quotes removed.
attr() {
    h5dump -a "$2/$3" "$1" 2>/dev/null | sed -n 's/^ *(0): *//p' | sed 's/^"\(.*\)"$/\1/'
}
# nrows FILE: rows of /summary, as h5dump reads them (empty when it cannot).
nrows() {
    h5dump -H -d /summary "$1" 2>/dev/null | sed -n 's/.*DATASPACE  SIMPLE { ( \([0-9]*\) ).*/\1/p'
}
# csv FILE OUT: `mxbench report FILE --format csv` into OUT; its exit status.
csv() { "$MX" report "$1" --format csv >"$2" 2>"$2.err"; }
# col CSV NAME: one column of a report CSV, quotes removed, one line per run. The reason
# column (the last, free text) is the only one that may hold commas; it is not read here.
col() {
    awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next }
                          c { v = $c; gsub(/"/, "", v); print v }' "$1"
}
count_status() { col "$1" status | grep -cx "$2"; }
# ok_rows FILE: how many runs FILE records as ok (0 while it cannot be read).
ok_rows() {
    csv "$1" "$T/poll.csv" 2>/dev/null || { echo 0; return; }
    count_status "$T/poll.csv" ok
}
# children PID: the pids whose parent is PID (from /proc; procps may be absent).
children() {
    local f s pid
    for f in /proc/[0-9]*/stat; do
        read -r s 2>/dev/null <"$f" || continue
        s=${s##*) } # after the command name: "state ppid ..."
        s=${s#* }
        [ "${s%% *}" = "$1" ] || continue
        pid=${f#/proc/}
        echo "${pid%/stat}"
    done
}
# alive PID: running and not a zombie.
alive() {
    local s
    read -r s 2>/dev/null <"/proc/$1/stat" || return 1
    s=${s##*) }
    [ "${s%% *}" != Z ]
}
# wait_gone PID...: up to 10 s for each to end.
wait_gone() {
    local p i
    for p in "$@"; do
        for i in $(seq 100); do alive "$p" || break; sleep 0.1; done
        alive "$p" && return 1
    done
    return 0
}

# ---- (a) a small grid: file layout, ok and skipped rows, report formats
section "(a) sweep data,model x 1,2 devices x local,device kvstores"
A=$T/grid.h5
"$MX" sweep --strategies data,model --gpus 1,2 --kvstore local,device --workload mlp --dataset synthetic \
    --steps 15 --batch 32 --out "$A" >"$T/a.out" 2>"$T/a.err"
rc=$?
if [ $rc -eq 0 ]; then
    pass "sweep exits 0 (skipped runs are not failures)"
else
    fail "sweep (a): expected exit 0, saw $rc"
    tail -20 "$T/a.err" "$T/a.out"
fi
n=$(nrows "$A")
# data: one one-device row (kvstore none, planned once, not once per kvstore) + 2 kvstores at 2
# devices; model uses no kvstore: one row per device count
[ "$n" = 5 ] && pass "/summary has 5 rows (one one-device row per strategy, no kvstore axis for model)" ||
    fail "h5dump -d /summary $A: expected 5 rows, saw '${n}'"

h5dump -d /summary "$A" >"$T/summary.txt" 2>&1
missing=""
for field in workload strategy gpus batch lr kvstore compression amp status throughput throughput_ci_low \
    throughput_ci_high step_time_median speedup efficiency test_acc; do
    grep -q "\"$field\";" "$T/summary.txt" || missing+=" $field"
done
[ -z "$missing" ] && pass "/summary has every expected field" ||
    fail "h5dump -d /summary: expected fields missing:$missing (saw: $(grep -o '"[a-z_]*";' "$T/summary.txt" | tr -d '";\n' | tr '\n' ' '))"

nok=0 nskip=0 bad_rows=""
for i in 0 1 2 3 4; do
    g=/runs/r000$i
    strategy=$(attr "$A" $g strategy) status=$(attr "$A" $g status) reason=$(attr "$A" $g reason)
    gpus=$(attr "$A" $g gpus) kv=$(attr "$A" $g kvstore)
    case $strategy/$gpus/$kv in
        */1/none | data/2/local | data/2/device | model/2/none) ;;
        *) bad_rows+=" $g: $gpus device(s) with kvstore '$kv' (one device records 'none');" ;;
    esac
    case $strategy/$status in
        data/ok) nok=$((nok + 1)) ;;
        model/skipped)
            nskip=$((nskip + 1))
            case $reason in *model*) ;; *) bad_rows+=" $g: skipped without a reason naming 'model' (reason '$reason');" ;; esac ;;
        model/ok) nok=$((nok + 1)); echo "note: $g: strategy model runs in this build" ;;
        *) bad_rows+=" $g: strategy '$strategy' status '$status' reason '${reason:0:120}';" ;;
    esac
done
[ -z "$bad_rows" ] && [ $nok -ge 3 ] && pass "data runs ok ($nok), model runs skipped with the reason ($nskip)" ||
    fail "run groups: expected data=ok and model=skipped with a reason:$bad_rows ($nok ok, $nskip skipped)"
[ $nskip -gt 0 ] && echo "    e.g. reason: $(attr "$A" /runs/r0003 reason)"

for fmt in text md csv json; do
    "$MX" report "$A" --format $fmt >"$T/report.$fmt" 2>"$T/report.$fmt.err"
    rc=$?
    [ $rc -eq 0 ] || { fail "report --format $fmt: expected exit 0, saw $rc: $(head -3 "$T/report.$fmt.err")"; continue; }
    case $fmt in
        text) grep -q "5 runs" "$T/report.text" && pass "report text lists 5 runs" ||
                  fail "report text: expected '5 runs', saw: $(head -2 "$T/report.text")" ;;
        md) n=$(grep -c '^| r00' "$T/report.md")
            grep -q '^| id |' "$T/report.md" && [ "$n" = 5 ] && pass "report md is a table of 5 rows" ||
                fail "report md: expected a header '| id |' and 5 rows, saw $n rows" ;;
        csv) n=$(($(wc -l <"$T/report.csv") - 1))
             head -1 "$T/report.csv" | grep -q '^id,workload,' && [ "$n" = 5 ] && pass "report csv has a header and 5 rows" ||
                 fail "report csv: expected header 'id,workload,...' and 5 rows, saw $n rows: $(head -1 "$T/report.csv")" ;;
        json)
            if command -v jq >/dev/null 2>&1; then
                n=$(jq '.runs | length' "$T/report.json" 2>&1)
                [ "$n" = 5 ] && pass "report json parses (jq) and has 5 runs" || fail "report json: expected 5 runs (jq), saw '$n'"
            elif command -v python3 >/dev/null 2>&1; then
                n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["runs"]))' "$T/report.json" 2>&1)
                [ "$n" = 5 ] && pass "report json parses (python3) and has 5 runs" || fail "report json: expected 5 runs, saw '$n'"
            else
                grep -q '"runs": \[' "$T/report.json" && pass "report json has a runs array (no JSON parser to check more)" ||
                    fail "report json: expected '\"runs\": [', saw: $(head -3 "$T/report.json")"
            fi ;;
    esac
done
# Numbers: every ok run has a throughput inside its interval; the 1-device runs have speedup 1.
csv "$A" "$T/a.csv"
bad=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
    { gsub(/"/, "") }
    $h["status"] == "ok" && !($h["throughput"] > 0 && $h["throughput_ci_low"] <= $h["throughput"] &&
                              $h["throughput"] <= $h["throughput_ci_high"]) { print $h["id"] ": throughput " $h["throughput"] " CI " $h["throughput_ci_low"] "-" $h["throughput_ci_high"] }
    $h["status"] == "ok" && $h["gpus"] == 1 && $h["speedup"] != 1 { print $h["id"] ": 1 device, speedup " $h["speedup"] }
    $h["status"] == "skipped" && $h["throughput"] != "" { print $h["id"] ": skipped run with throughput " $h["throughput"] }' "$T/a.csv")
[ -z "$bad" ] && pass "throughputs lie in their intervals, 1-device speedup is 1, skipped runs have none" ||
    fail "report csv figures: $bad"

# ---- (a2) what a strategy refuses is a skipped row with its reason; the pipeline's axes
section "(a2) sweep rows a strategy refuses, and the pipeline's axes"
P=$T/pipe.h5
"$MX" sweep --strategies data,model,layer --gpus 1,8,16 --workload mlp --dataset synthetic --steps 10 --batch 32 \
    --micro-batches 1,2 --schedule gpipe,1f1b --dry-run --out "$P" >"$T/a2.out" 2>"$T/a2.err"
rc=$?
plan=$(cat "$T/a2.out")
# data: 1,8,16 (3); model: 1,8,16 x m 1,2 x gpipe,1f1b (12); layer: 1,8,16 (3)
nrows=$(grep -c '^ *[0-9]\+  mlp' "$T/a2.out")
[ $rc -eq 0 ] && [ "$nrows" = 18 ] && pass "the pipeline's axes multiply model rows only (18 rows)" ||
    fail "sweep --dry-run (a2): exit $rc, $nrows rows, expected 0 and 18: $plan"
grep -q 'mlp model x8 .*skipped: model strategy on 8 devices: mlp has 6 top-level layers' "$T/a2.out" &&
    grep -q 'mlp layer x16 .*skipped: layer strategy on 16 devices: .*10 units' "$T/a2.out" &&
    ! grep -q 'mlp layer x8 .*skipped' "$T/a2.out" && ! grep -q 'mlp data x.*skipped' "$T/a2.out" &&
    pass "rows the strategy refuses are skipped with its reason (model x8 on 6 layers, layer x16 on 10 units)" ||
    fail "sweep --dry-run (a2): expected model x8 and layer x16 skipped with reasons, nothing else: $plan"
grep -q 'mlp model x1 .* m=2 1f1b' "$T/a2.out" &&
    pass "model rows are labelled with their micro-batches and schedule" ||
    fail "sweep --dry-run (a2): expected a row labelled 'm=2 1f1b': $plan"

# compression: a one-device row compresses nothing (planned once, the first point of every
# compressor's series); local refuses it, so those rows are skipped with the reason
"$MX" sweep --gpus 1,2 --kvstore local,device --compression none,fp16,2bit --workload mlp --dataset synthetic \
    --steps 10 --dry-run --out "$T/gc.h5" >"$T/gc.out" 2>&1
n1=$(grep -c 'mlp data x1 ' "$T/gc.out") nskip=$(grep -c 'kv=local .*gc=.*skipped: compression .* with kvstore local' "$T/gc.out")
[ "$n1" = 1 ] && [ "$nskip" = 2 ] && grep -q 'kv=device .*gc=2bit$' "$T/gc.out" &&
    pass "compression axis: one x1 row, local rows with a compressor skipped with the reason, device rows planned" ||
    fail "sweep --dry-run --compression: $n1 x1 rows (expected 1), $nskip skipped local rows (expected 2): $(cat "$T/gc.out")"

# ---- (b) crash safety: kill -9 mid-sweep, then --resume
section "(b) kill -9 during a sweep of 6 runs, then --resume"
C=$T/crash.h5
CRASH_ARGS=(--workload lenet --dataset synthetic --gpus 1,2 --lr 0.05,0.02,0.01 --batch 32 --steps 100 --out "$C")
"$MX" sweep "${CRASH_ARGS[@]}" >"$T/b1.out" 2>"$T/b1.err" &
spid=$!
done_before=0
for i in $(seq 1200); do # up to 120 s for the first run to finish
    kill -0 $spid 2>/dev/null || break
    done_before=$(ok_rows "$C")
    [ "$done_before" -ge 1 ] && break
    sleep 0.1
done
if ! kill -0 $spid 2>/dev/null; then
    fail "the sweep ended before it could be killed; its output: $(tail -5 "$T/b1.err")"
else
    # Stop it first, so that no new child starts between finding the children and the kill.
    kill -STOP $spid
    kids=$(children $spid)
    kill -9 $spid
    for k in $kids; do kill -9 -- -"$k" 2>/dev/null || kill -9 "$k" 2>/dev/null; done
    wait $spid 2>/dev/null
    echo "killed the sweep (pid $spid) and its run (pid ${kids:-none}) after $done_before finished run(s)"
    if [ -n "$kids" ] && ! wait_gone $kids; then
        fail "after kill -9 of the sweep and its run's process group, run $kids is still alive"
    fi
    if h5dump -H "$C" >/dev/null 2>"$T/b.h5err"; then
        pass "h5dump reads the file of the killed sweep"
    else
        fail "h5dump $C after kill -9: expected a readable file, saw: $(head -3 "$T/b.h5err")"
    fi
    if csv "$C" "$T/b1.csv"; then
        k=$(($(wc -l <"$T/b1.csv") - 1))
        nok=$(count_status "$T/b1.csv" ok)
        if [ "$k" -gt 0 ] && [ "$k" -lt 6 ] && [ "$nok" -eq "$k" ]; then
            pass "report lists the $k finished run(s) of the killed sweep, all ok"
        else
            fail "report after kill -9: expected 1..5 runs, all ok; saw $k runs, $nok ok"
        fi
        ls "$C".* >/dev/null 2>&1 && echo "note: the killed sweep left $(cd "$T" && ls crash.h5.* | tr '\n' ' ')(documented as safe to delete)"

        "$MX" sweep "${CRASH_ARGS[@]}" --resume >"$T/b2.out" 2>"$T/b2.err"
        rc=$?
        [ $rc -eq 0 ] && pass "sweep --resume exits 0" || { fail "sweep --resume: expected exit 0, saw $rc"; tail -10 "$T/b2.err"; }
        csv "$C" "$T/b2.csv"
        n=$(($(wc -l <"$T/b2.csv") - 1))
        nok=$(count_status "$T/b2.csv" ok)
        configs=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next } { print $h["gpus"] "/" $h["base_lr"] }' "$T/b2.csv" | sort -u | wc -l)
        ids=$(col "$T/b2.csv" id | sort -u | wc -l)
        [ "$n" = 6 ] && [ "$nok" = 6 ] && [ "$configs" = 6 ] && [ "$ids" = 6 ] &&
            pass "--resume completes the file to exactly 6 ok runs, 6 configurations, 6 ids" ||
            fail "--resume: expected 6 ok runs of 6 distinct configurations; saw $n runs, $nok ok, $configs configurations, $ids ids"
        skipped_again=$(grep -c "already in the file" "$T/b2.err")
        [ "$skipped_again" = "$k" ] && pass "--resume passed over the $k finished run(s)" ||
            fail "--resume: expected $k runs reported 'already in the file', saw $skipped_again"
        # The finished runs were kept as they were, not run again.
        awk -F, -v k="$k" 'NR > 1 && NR <= k + 1 { print $1, $19, $30 }' "$T/b1.csv" >"$T/b1.keep"
        awk -F, -v k="$k" 'NR > 1 && NR <= k + 1 { print $1, $19, $30 }' "$T/b2.csv" >"$T/b2.keep"
        head -1 "$T/b1.csv" | awk -F, '$1 != "id" || $19 != "throughput" || $30 != "wall_time" { exit 1 }' ||
            fail "report csv columns moved: expected id, throughput, wall_time in columns 1, 19, 30"
        cmp -s "$T/b1.keep" "$T/b2.keep" && pass "the runs finished before the kill are unchanged after --resume" ||
            { fail "runs finished before the kill changed after --resume:"; diff "$T/b1.keep" "$T/b2.keep"; }

        "$MX" sweep "${CRASH_ARGS[@]}" --resume >"$T/b3.out" 2>"$T/b3.err"
        rc=$?
        n=$(nrows "$C")
        [ $rc -eq 0 ] && [ "$n" = 6 ] && [ "$(grep -c "already in the file" "$T/b3.err")" = 6 ] &&
            pass "a second --resume runs nothing and keeps 6 runs" ||
            fail "a second --resume: expected exit 0, 6 runs, 6 passed over; saw exit $rc, $n runs"
    else
        fail "report $C after kill -9: expected exit 0, saw: $(head -3 "$T/b1.csv.err")"
    fi
fi

cp "$C" "$T/crash.copy"
"$MX" sweep "${CRASH_ARGS[@]}" >"$T/b4.out" 2>"$T/b4.err"
rc=$?
[ $rc -eq 2 ] && grep -qF "$C" "$T/b4.err" && grep -q -- "--force" "$T/b4.err" &&
    pass "a sweep onto an existing file without --force exits 2 naming it and --force" ||
    fail "sweep onto existing $C without --force: expected exit 2 and a message naming the file and --force; saw exit $rc: $(head -3 "$T/b4.err")"
cmp -s "$C" "$T/crash.copy" && pass "the existing file is untouched" || fail "the refused sweep modified $C"

# SIGTERM: the sweep stops its run, keeps the finished ones and exits 143 (128 + SIGTERM).
section "(b) SIGTERM during a sweep"
S=$T/term.h5
"$MX" sweep --workload lenet --dataset synthetic --gpus 1,2 --lr 0.05,0.02 --batch 32 --steps 100 --out "$S" \
    >"$T/t.out" 2>"$T/t.err" &
spid=$!
for i in $(seq 1200); do
    kill -0 $spid 2>/dev/null || break
    [ "$(ok_rows "$S")" -ge 1 ] && break
    sleep 0.1
done
if kill -0 $spid 2>/dev/null; then
    kids=$(children $spid)
    kill -TERM $spid
    wait $spid
    rc=$?
    [ $rc -eq 143 ] && grep -q "interrupted by SIGTERM" "$T/t.err" && pass "SIGTERM: the sweep exits 143 saying it was interrupted" ||
        fail "SIGTERM: expected exit 143 and 'interrupted by SIGTERM' on stderr, saw exit $rc: $(tail -2 "$T/t.err")"
    [ -z "$kids" ] || wait_gone $kids || fail "SIGTERM: the sweep left its run $kids running"
    csv "$S" "$T/t.csv" && k=$(($(wc -l <"$T/t.csv") - 1)) && [ "$k" -ge 1 ] && [ "$k" -lt 4 ] &&
        [ "$(count_status "$T/t.csv" ok)" = "$k" ] && pass "SIGTERM: the file keeps the $k finished run(s), all ok" ||
        fail "SIGTERM: expected 1..3 ok runs in $S, saw: $(cat "$T/t.csv" "$T/t.csv.err" 2>/dev/null | head -5)"
else
    fail "the sweep ended before SIGTERM; its output: $(tail -5 "$T/t.err")"
fi

# ---- (c) plots
section "(c) plot"
if command -v gnuplot >/dev/null 2>&1; then
    "$MX" plot "$A" --out "$T/plots" >"$T/p.out" 2>"$T/p.err"
    rc=$?
    [ $rc -eq 0 ] && pass "plot exits 0" || { fail "plot $A: expected exit 0, saw $rc"; tail -5 "$T/p.err"; }
    npng=0 nsvg=0
    while read -r f; do
        case $f in
            *.png)
                sig=$(head -c 8 "$f" 2>/dev/null | od -An -tx1 | tr -d ' \n')
                [ "$sig" = 89504e470d0a1a0a ] && npng=$((npng + 1)) || fail "$f: expected a PNG signature, saw '$sig'" ;;
            *.svg)
                [ -s "$f" ] && grep -q "<svg" "$f" && nsvg=$((nsvg + 1)) || fail "$f: expected a non-empty SVG file with '<svg'" ;;
        esac
    done <"$T/p.out"
    [ $npng -ge 1 ] && [ $nsvg -ge 1 ] && [ $npng = $nsvg ] && pass "plot wrote $npng PNG and $nsvg SVG files" ||
        fail "plot: expected PNG and SVG files in pairs, saw $npng PNG and $nsvg SVG: $(cat "$T/p.out")"
else
    echo "skip: (c) gnuplot is not installed; plots not checked"
fi

# ---- (d) per-run timeout
section "(d) --timeout 1 on runs that take longer"
D=$T/timeout.h5
start=$(date +%s)
# The outer `timeout` only guards this test against a --timeout that does not work.
guard=()
command -v timeout >/dev/null 2>&1 && guard=(timeout 120) # SIGTERM: the sweep then stops its run too
"${guard[@]+"${guard[@]}"}" "$MX" sweep --workload lenet --dataset synthetic --gpus 1,2 --batch 32 --steps 100000 \
    --timeout 1 --out "$D" >"$T/d.out" 2>"$T/d.err"
rc=$?
secs=$(($(date +%s) - start))
[ $rc -eq 1 ] && pass "a sweep with timed-out runs exits 1" || { fail "sweep --timeout 1: expected exit 1, saw $rc"; tail -5 "$T/d.err"; }
[ $secs -lt 60 ] && pass "two runs with --timeout 1 end in $secs s" || fail "--timeout 1: two runs took $secs s"
if csv "$D" "$T/d.csv"; then
    nf=$(count_status "$T/d.csv" failed)
    [ "$nf" = 2 ] && pass "both runs recorded as failed" || fail "--timeout: expected 2 failed runs, saw $nf: $(cat "$T/d.csv")"
    for g in /runs/r0000 /runs/r0001; do
        reason=$(attr "$D" $g reason) es=$(attr "$D" $g exit_status)
        case $reason in
            *"timed out"*) pass "$g: reason says timed out (exit status $es)" ;;
            *) fail "$g: expected 'timed out' in the reason, saw '${reason:0:200}'" ;;
        esac
    done
else
    fail "report $D after timeouts: expected a readable file, saw: $(head -3 "$T/d.csv.err")"
fi

# ---- (e) --resume --retry-failed runs the failed rows again, in place
section "(e) --resume --retry-failed after the timeouts of (d)"
if [ -s "$D" ]; then
    # the same configurations, given a length they can finish: --steps is part of the
    # configuration, so the timed-out rows are retried with a generous --timeout instead
    "$MX" sweep --workload lenet --dataset synthetic --gpus 1,2 --batch 32 --steps 100000 --timeout 2 \
        --resume --out "$D" >"$T/e0.out" 2>"$T/e0.err"
    grep -q "already in the file" "$T/e0.err" && [ "$(nrows "$D")" = 2 ] &&
        pass "--resume without --retry-failed keeps the failed rows and runs nothing" ||
        fail "--resume: expected failed rows kept, saw $(nrows "$D") rows: $(tail -3 "$T/e0.err")"
    cp "$D" "$T/before_retry.h5"
    # a child of the retry is killed by SIGKILL: its row is rewritten, failed, naming the signal
    # --threads-per-device 1: what (d) had by default (2 cores / 2 devices); it is part of the configuration
    ( "$MX" sweep --workload lenet --dataset synthetic --gpus 1 --threads-per-device 1 --batch 32 --steps 100000 --timeout 60 \
        --resume --retry-failed --out "$D" >"$T/e.out" 2>"$T/e.err" ) &
    spid=$!
    child=""
    for _ in $(seq 100); do
        child=$(pgrep -f -- "--record $D.run-" | head -1)
        [ -n "$child" ] && break
        sleep 0.1
    done
    sleep 1
    [ -n "$child" ] && kill -KILL "$child"
    wait $spid
    rc=$?
    reason=$(attr "$D" /runs/r0000 reason)
    [ "$(nrows "$D")" = 2 ] && pass "--retry-failed replaced the row in place (still 2 rows)" ||
        fail "--retry-failed: expected 2 rows, saw $(nrows "$D")"
    case $reason in
        *"killed by SIGKILL"*) pass "a child killed by SIGKILL is recorded naming the signal (sweep exit $rc)" ;;
        *) fail "a killed child: expected 'killed by SIGKILL' in the reason, saw '${reason:0:200}'" ;;
    esac
    case $(attr "$T/before_retry.h5" /runs/r0000 reason) in
        *"timed out"*) pass "the copy from before the retry still says timed out" ;;
        *) fail "the file before the retry changed" ;;
    esac
else
    fail "(e) needs the file of (d)"
fi

# (f) rows that ask for more threads than cores are warned of once, before the plan, by row
many=$(($(nproc) * 2))
"$MX" sweep --workload mlp --dataset synthetic --steps 8 --kvstore local,device --gpus 1,$many --dry-run \
    >"$T/over.out" 2>"$T/over.err"
rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c 'warning: 2 of 3 rows ask for more than' "$T/over.err")" = 1 ] &&
    grep -q "rows 2 ($many devices x 1 thread), 3 ($many devices x 1 thread)" "$T/over.err" &&
    [ "$(grep -c '\[oversubscribed\]' "$T/over.out")" = 2 ]; then
    pass "--gpus 1,$many on $(nproc) cores: one warning naming rows 2 and 3, both marked in the plan"
else
    fail "--gpus 1,$many on $(nproc) cores: expected one warning naming rows 2 and 3 and two marked rows (exit $rc)"
    sed 's/^/    /' "$T/over.err" "$T/over.out"
fi

# (g) a study continued by --resume keeps every command that wrote it, one line each
"$MX" sweep --workload mlp --dataset synthetic --gpus 1 --steps 8 --out "$T/cmd.h5" >/dev/null 2>&1 &&
    "$MX" sweep --workload mlp --dataset synthetic --gpus 2 --steps 8 --out "$T/cmd.h5" --resume >/dev/null 2>&1
cl=$(h5dump -a command_line "$T/cmd.h5" 2>/dev/null)
if [[ $cl == *"--gpus 1 --steps 8 --out $T/cmd.h5"* && $cl == *"--gpus 2 --steps 8 --out $T/cmd.h5 --resume"* ]]; then
    pass "command_line holds the first sweep and the one that resumed it"
else
    fail "command_line after --resume: expected both sweeps' command lines, saw: $cl"
fi

echo "test_sweep: $npass passed, $nfail failed"
[ $nfail -eq 0 ]
