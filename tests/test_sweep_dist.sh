#!/usr/bin/env bash
# End-to-end tests of `mxbench sweep` launching dist_* rows as mpirun jobs: (a) every kvstore
# over 1 and 2 devices, every row ok, ranks and servers as the rule says, the oversubscribed
# rows warned of once and recorded, plots; (b) a rank killed with SIGKILL fails its row,
# naming the rank, within 30 s, and the next row runs; (c) a rank stopped with SIGSTOP is
# caught by --timeout and no rank outlives the row; (d) bad MPI options exit 2 naming the value.
# usage: test_sweep_dist.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u

MX=${1:?usage: test_sweep_dist.sh MXBENCH SOURCE_DIR BUILD_DIR}
case $MX in /*) ;; *) MX=$PWD/$MX ;; esac
[ -x "$MX" ] || { echo "test_sweep_dist: mxbench binary '$MX' is missing or not executable"; exit 1; }
MX=$(readlink -f "$MX") # the path the ranks run under (the sweep hands mpirun its resolved path)
command -v h5dump >/dev/null 2>&1 || { echo "test_sweep_dist: h5dump not found (apt-get install hdf5-tools)"; exit 1; }
command -v mpirun >/dev/null 2>&1 || { echo "skip: mpirun not found (apt-get install openmpi-bin)"; exit 77; }
if "$MX" sweep --kvstore dist_sync --gpus 2 --workload mlp --dataset synthetic --steps 10 --dry-run 2>&1 |
    grep -q "needs MPI"; then
    echo "skip: this mxbench is built without MPI (its dist_* rows are skipped)"
    exit 77
fi
# the sweep sets Open MPI's allow-run-as-root switches itself when root: that is under test
unset OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
T=$(mktemp -d "${TMPDIR:-/tmp}/mxbench-test_sweep_dist.XXXXXX") || exit 1
cd "$T" || exit 1

# ranks PATTERN: pids of the `mxbench train` ranks whose command line holds PATTERN (from
# /proc: procps may be absent). Only this test's ranks: PATTERN names a file under $T.
ranks() {
    local f c
    for f in /proc/[0-9]*/cmdline; do
        c=$(tr '\0' ' ' 2>/dev/null <"$f") || continue
        case $c in "$MX train "*"$1"*) f=${f#/proc/}; echo "${f%/cmdline}" ;; esac
    done
}
# rank_pid PATTERN N: the pid of MPI rank N among them.
rank_pid() {
    local p
    for p in $(ranks "$1"); do
        tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qx "OMPI_COMM_WORLD_RANK=$2" && { echo "$p"; return; }
    done
}
# wait_ranks PATTERN N SECONDS: until N ranks run (1) or SECONDS pass (0).
wait_ranks() {
    local i
    for i in $(seq $(($3 * 10))); do
        [ "$(ranks "$1" | wc -l)" -ge "$2" ] && return 0
        sleep 0.1
    done
    return 1
}
cleanup() {
    local p
    for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
    for p in $(ranks "$T/"); do kill -9 "$p" 2>/dev/null; done # a stopped or orphaned rank
    rm -rf "$T"
}
trap cleanup EXIT

npass=0 nfail=0
pass() { npass=$((npass + 1)); echo "ok: $*"; }
fail() { nfail=$((nfail + 1)); echo "FAIL: $*"; }
section() { echo "---- $* ($(date +%T))"; }
attr() { h5dump -a "$2/$3" "$1" 2>/dev/null | sed -n 's/^ *(0): *//p' | sed 's/^"\(.*\)"$/\1/'; }
# rows CSV FIELD...: those columns of a report CSV, space-separated, one line per run (the
# reason, the last column and the only one with commas, is not read)
rows() {
    local f=$1
    shift
    awk -F, -v want="$*" 'NR == 1 { n = split(want, w, " "); for (i = 1; i <= NF; i++) h[$i] = i; next }
        { gsub(/"/, ""); line = ""; for (i = 1; i <= n; i++) line = line (i > 1 ? " " : "") $h[w[i]]; print line }' "$f"
}
cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc)

# ---- (a) every kvstore, 1 and 2 devices
section "(a) sweep local,device and every dist_* kvstore x 1,2 devices"
A=$T/all.h5
start=$(date +%s)
"$MX" sweep --workload mlp --dataset synthetic --steps 20 --batch 32 \
    --kvstore local,device,dist_sync,dist_device_sync,dist_async,dist_allreduce --gpus 1,2 --out "$A" \
    >"$T/a.out" 2>"$T/a.err"
rc=$?
echo "    took $(($(date +%s) - start)) s"
[ $rc -eq 0 ] && pass "the sweep exits 0" || { fail "sweep (a): expected exit 0, saw $rc"; tail -20 "$T/a.err"; }
"$MX" report "$A" --format csv >"$T/a.csv" 2>"$T/a.csv.err" || fail "report $A: $(head -3 "$T/a.csv.err")"
rows "$T/a.csv" kvstore gpus status workers servers nranks oversubscribed >"$T/a.rows"
n=$(wc -l <"$T/a.rows")
nok=$(awk '$3 == "ok"' "$T/a.rows" | wc -l)
# one one-device row without kvstore for local,device; every dist_* mode at 1 and 2 devices
[ "$n" = 11 ] && [ "$nok" = 11 ] && pass "11 rows, every one ok" ||
    fail "expected 11 rows, all ok; saw $n rows, $nok ok: $(cat "$T/a.rows" | tr '\n' ';')"
missing=""
for kv in none local device dist_sync dist_device_sync dist_async dist_allreduce; do
    grep -q "^$kv " "$T/a.rows" || missing+=" $kv"
done
[ -z "$missing" ] && pass "the file has every mode (none local device dist_sync dist_device_sync dist_async dist_allreduce)" ||
    fail "kvstores missing from $A:$missing (rows: $(cut -d' ' -f1,2 "$T/a.rows" | tr '\n' ';'))"
# the rule: G workers of one device each; servers G for the parameter-server modes, 0 for
# dist_allreduce; every rank in the record; oversubscribed when ranks x 1 thread > cores
bad=$(awk -v cores="$cores" '$1 ~ /^dist_/ {
        srv = $1 == "dist_allreduce" ? 0 : $2
        over = ($2 + srv > cores) ? 1 : 0
        if ($4 != $2 || $5 != srv || $6 != $2 + srv || $7 != over)
            print $1 " x" $2 ": workers " $4 " servers " $5 " ranks " $6 " oversubscribed " $7 " (expected " $2 ", " srv ", " $2 + srv ", " over ")"
    }' "$T/a.rows")
[ -z "$bad" ] && pass "dist_* rows: G workers, G servers (none for dist_allreduce), every rank recorded, oversubscribed as ranks > $cores cores" ||
    fail "dist_* rows against the rule: $bad"
nover=$(awk '$7 == 1' "$T/a.rows" | wc -l)
nwarn=$(grep -c "^mxbench sweep: warning: $nover of [0-9]* rows ask for more than this machine's $cores cores" "$T/a.err")
if [ "$nover" -gt 0 ]; then
    [ "$nwarn" = 1 ] && pass "one warning for the $nover oversubscribed row(s)" ||
        fail "expected one 'mxbench sweep: warning: $nover of N rows ask for more than ...', saw $nwarn"
else
    [ "$nwarn" = 0 ] && pass "no row oversubscribed on $cores cores, no warning" || fail "a warning without an oversubscribed row"
fi
if [ "$(id -u)" = 0 ]; then
    [ "$(grep -c "running as root: Open MPI's allow-run-as-root switches are set" "$T/a.err")" = 1 ] &&
        pass "as root: said once that the allow-run-as-root switches are set" ||
        fail "as root: expected one line 'running as root: Open MPI's allow-run-as-root switches are set'"
fi
g=$(awk -F, 'NR > 1 && $5 == "\"dist_sync\"" && $9 == 2 { gsub(/"/, "", $1); print $1 }' "$T/a.csv")
[ -n "$g" ] && [ "$(attr "$A" "/runs/$g" kvstore)" = dist_sync ] && pass "the dist_sync x2 run group ($g) says kvstore dist_sync" ||
    fail "no run group of dist_sync x2 in $A"
if command -v gnuplot >/dev/null 2>&1; then
    "$MX" plot "$A" --out "$T/plots" >"$T/p.out" 2>"$T/p.err"
    rc=$?
    npng=$(grep -c '\.png$' "$T/p.out") nsvg=$(grep -c '\.svg$' "$T/p.out")
    nfiles=0
    while read -r f; do [ -s "$f" ] && nfiles=$((nfiles + 1)); done <"$T/p.out"
    [ $rc -eq 0 ] && [ "$npng" -ge 1 ] && [ "$npng" = "$nsvg" ] && [ "$nfiles" = $((npng + nsvg)) ] &&
        pass "plot draws the file: $npng PNG and $nsvg SVG" ||
        fail "plot $A: expected exit 0 and PNG/SVG pairs, saw exit $rc, $npng PNG, $nsvg SVG: $(tail -3 "$T/p.err")"
else
    echo "skip: gnuplot is not installed; plots not checked"
fi

# ---- (b) a rank killed with SIGKILL
# lenet first (about 20 ms a step here: killed long before its end), then mlp (about 5 ms)
section "(b) SIGKILL of rank 1 of a dist_sync row; the row after it"
B=$T/killed.h5
"$MX" sweep --workload lenet,mlp --dataset synthetic --steps 1000 --batch 32 --kvstore dist_sync --gpus 2 \
    --timeout 120 --out "$B" >"$T/b.out" 2>"$T/b.err" &
spid=$!
if wait_ranks "$B" 4 30; then
    sleep 1
    victim=$(rank_pid "$B" 1)
    kill -9 "$victim"
    killed=$(date +%s)
    echo "    killed rank 1 (pid $victim)"
    ended=""
    for i in $(seq 300); do # the row's end, within 30 s
        grep -q "^\[1/2\].*: failed" "$T/b.err" && { ended=$(date +%s); break; }
        kill -0 $spid 2>/dev/null || break
        sleep 0.1
    done
    [ -n "$ended" ] && pass "the row ended $((ended - killed)) s after the kill (at most 30)" ||
        fail "the row did not end within 30 s of the kill: $(tail -3 "$T/b.err")"
    wait $spid
    rc=$?
    [ $rc -eq 1 ] && pass "the sweep exits 1 (a failed row)" || fail "sweep (b): expected exit 1, saw $rc"
    "$MX" report "$B" --format csv >"$T/b.csv" 2>/dev/null
    st=$(rows "$T/b.csv" workload kvstore status | tr '\n' ';')
    reason=$(attr "$B" /runs/r0000 reason)
    [ "$st" = "lenet dist_sync failed;mlp dist_sync ok;" ] && pass "the killed row failed, the next row ran and is ok" ||
        fail "(b): expected 'lenet dist_sync failed;mlp dist_sync ok;', saw '$st'"
    case $reason in
        *"rank 1 (worker 1)"*"signal 9"*) pass "the reason names the rank: ${reason:0:130}" ;;
        *) fail "the reason should name rank 1 (worker 1) and signal 9; saw '${reason:0:300}'" ;;
    esac
else
    fail "(b): the dist_sync row's 4 ranks did not start within 30 s: $(tail -5 "$T/b.err")"
fi
[ -z "$(ranks "$B")" ] && pass "no rank of (b) is left" || fail "(b) left ranks running: $(ranks "$B")"

# ---- (c) a rank stopped with SIGSTOP: the sweep's --timeout ends the whole job
section "(c) SIGSTOP of a server rank, --timeout 8"
C=$T/stopped.h5
start=$(date +%s)
"$MX" sweep --workload mlp --dataset synthetic --steps 4000000 --batch 32 --kvstore dist_sync --gpus 2 \
    --timeout 8 --out "$C" >"$T/c.out" 2>"$T/c.err" &
spid=$!
if wait_ranks "$C" 4 30; then
    victim=$(rank_pid "$C" 2)
    kill -STOP "$victim"
    echo "    stopped rank 2, server 0 (pid $victim)"
fi
wait $spid
rc=$?
secs=$(($(date +%s) - start))
reason=$(attr "$C" /runs/r0000 reason)
[ $rc -eq 1 ] && [ "$(attr "$C" /runs/r0000 status)" = failed ] && [ $secs -lt 40 ] &&
    pass "the row failed and the sweep ended in $secs s (exit 1)" ||
    fail "(c): expected exit 1, a failed row, under 40 s; saw exit $rc, status '$(attr "$C" /runs/r0000 status)', $secs s"
case $reason in
    *"timed out"*) pass "the reason says timed out" ;;
    *) fail "(c): expected 'timed out' in the reason, saw '${reason:0:200}'" ;;
esac
left=$(ranks "$C")
[ -z "$left" ] && pass "no rank outlives the timed-out row (the stopped one included)" ||
    fail "(c): ranks left after the timeout: $left"

# ---- (d) bad input: exit 2 naming the value
section "(d) bad MPI options"
D=(--workload mlp --dataset synthetic --steps 10 --kvstore dist_sync --gpus 2 --out "$T/d.h5")
expect2() { # expect2 WHAT TEXT ARGS...: exit 2 with TEXT in the message, nothing written
    local what=$1 text=$2
    shift 2
    "$@" >"$T/d.out" 2>"$T/d.err"
    local rc=$?
    [ $rc -eq 2 ] && grep -qF -- "$text" "$T/d.err" && [ ! -e "$T/d.h5" ] && pass "$what: exit 2: $(head -c 150 "$T/d.err")" ||
        fail "$what: expected exit 2 naming '$text', saw exit $rc: $(head -3 "$T/d.err")"
}
expect2 "--hostfile missing" "$T/no-such-hosts" "$MX" sweep "${D[@]}" --hostfile "$T/no-such-hosts"
printf '# two hosts\nlocalhost slots=2\n\nnode2 slots=two\n' >"$T/bad.hosts"
expect2 "--hostfile malformed" "$T/bad.hosts line 4: 'node2 slots=two'" "$MX" sweep "${D[@]}" --hostfile "$T/bad.hosts"
grep -q "accepted: one host per line" "$T/d.err" && pass "the message says what a host file line may be" ||
    fail "malformed host file: the message should say what is accepted: $(cat "$T/d.err")"
expect2 "--mpirun nonexistent" "/nonexistent/mpirun" "$MX" sweep "${D[@]}" --mpirun /nonexistent/mpirun
expect2 "no mpirun on PATH" "mpirun not found on PATH" env PATH=/nonexistent "$MX" sweep "${D[@]}"
expect2 "--mpirun-args with -np" "-np" "$MX" sweep "${D[@]}" --mpirun-args "--bind-to none -np 3"
expect2 "--servers without a parameter-server mode" "--servers 2" "$MX" sweep "${D[@]/dist_sync/local}" --servers 2
printf 'localhost slots=4 # this machine\n' >"$T/ok.hosts"
"$MX" sweep "${D[@]}" --hostfile "$T/ok.hosts" --dry-run >"$T/d.out" 2>"$T/d.err" && grep -q "mpirun -np 4" "$T/d.out" &&
    pass "a valid host file is accepted (dry run: mpirun -np 4)" || fail "a valid host file: $(cat "$T/d.err" "$T/d.out")"

echo "test_sweep_dist: $npass passed, $nfail failed"
[ $nfail -eq 0 ]
