#!/usr/bin/env bash
# The dist_* kvstores as MPI jobs of `mxbench train`:
#  1. equivalence: after 20 steps of mlp and 12 of lenet, dist_sync (2 workers of batch b),
#     dist_device_sync (2 workers of 2 devices), dist_allreduce (2 workers) and dist_sync with
#     keys split over 3 servers give the weights of `local` with the same global batch and
#     devices in one process;
#  2. dist_async: 1 worker has staleness 0; 2 workers and 2 servers train lenet for an epoch
#     at the default recipe to within 1.5 accuracy points of dist_sync, staleness above 0;
#  3. the record: every rank's row, the workers' spread;
#  4. roles from MXNet's DMLC_* variables; launch errors exit 2 naming the value;
#  5. a worker killed mid-run ends the job within 30 s, the rank named.
# Tolerances: with one device per worker, the servers (and the all-reduce) sum the workers'
# gradients in worker order, as `local` sums its devices in device order: the bits are equal,
# so the tolerance is 0. dist_device_sync sums (g0+g1)+(g2+g3) where local sums
# ((g0+g1)+g2)+g3: float rounding differs in the last bits (measured 2.2e-7 of the largest
# weight after 20 steps); 1e-5 leaves a 45x margin and still fails on a wrong sum or scale.
# The runs keep a constant lr, and lenet's are 12 steps: lenet's dist_device_sync run met a
# rounding tie decided the other way (a max-pool or relu kink) after step 15, once under the
# cosine schedule (11282 weights more than 1e-6 apart, at most 5.7e-4) and once with the own
# AVX-512 GEMM at a constant lr (at most 3.8e-6 at step 20), while 5, 10 and 15 steps stayed
# within 1.4e-7 of the largest weight both times: that is the chaos of one flipped tie, not a
# wrong sum, and this test is about sums, which a wrong one breaks from the first step.
# usage: test_dist_train.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u

MX=${1:?usage: test_dist_train.sh MXBENCH SOURCE_DIR BUILD_DIR}
BUILD=${3:?usage: test_dist_train.sh MXBENCH SOURCE_DIR BUILD_DIR}
case $MX in /*) ;; *) MX=$PWD/$MX ;; esac
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
DIFF=$BUILD/params_diff
command -v mpirun >/dev/null 2>&1 || { echo "test_dist_train: mpirun not found (apt-get install openmpi-bin)"; exit 77; }
command -v h5dump >/dev/null 2>&1 || { echo "test_dist_train: h5dump not found (apt-get install hdf5-tools)"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/mxbench-test_dist_train.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
# one machine: force TCP so that traffic crosses the network stack as between hosts
MPI=(mpirun --oversubscribe --mca btl self,tcp)

npass=0 nfail=0
pass() { npass=$((npass + 1)); echo "ok: $*"; }
fail() { nfail=$((nfail + 1)); echo "FAIL: $*"; }
indent() { sed 's/^/    /' "$@" | tail -n 15; }
attr() { h5dump -a "/runs/r0000/$2" "$1" 2>/dev/null | sed -n 's/^ *(0): *//p' | head -1; }

# run NAME CMD...: runs quietly, failing the test (with its stderr) on a non-zero exit
run() {
    local name=$1
    shift
    if "$@" >"$T/$name.out" 2>"$T/$name.err"; then return 0; fi
    fail "$name: exit $? from: $*"
    indent "$T/$name.err"
    return 1
}
same() { # same WHAT A B TOL
    if "$DIFF" "$2" "$3" "$4" >"$T/diff.out" 2>&1; then pass "$1: $(cat "$T/diff.out")"
    else fail "$1: $(cat "$T/diff.out")"; fi
}

# ---- 1. the same weights as one process
for w in mlp lenet; do
    steps=20
    [ "$w" = lenet ] && steps=12
    A=(train --workload "$w" --dataset synthetic --steps $steps --quiet --lr-schedule constant)
    run "$w-local2" "$MX" "${A[@]}" --kvstore local --gpus 2 --batch 32 --save-params "$T/$w-l2" &&
    run "$w-local4" "$MX" "${A[@]}" --kvstore local --gpus 4 --batch 32 --save-params "$T/$w-l4" || continue
    run "$w-sync" "${MPI[@]}" -np 4 "$MX" "${A[@]}" --kvstore dist_sync --batch 16 --save-params "$T/$w-ds" &&
        same "$w dist_sync, 2 workers x batch 16 = local x2 batch 32" "$T/$w-ds" "$T/$w-l2" 0
    run "$w-split" env MXNET_KVSTORE_BIGARRAY_BOUND=100 "${MPI[@]}" -x MXNET_KVSTORE_BIGARRAY_BOUND -np 5 "$MX" \
        "${A[@]}" --kvstore dist_sync --servers 3 --batch 16 --save-params "$T/$w-dsb" &&
        same "$w dist_sync, keys over 100 values split over 3 servers and reassembled" "$T/$w-dsb" "$T/$w-l2" 0
    run "$w-devsync" "${MPI[@]}" -np 4 "$MX" "${A[@]}" --kvstore dist_device_sync --gpus 2 --batch 16 \
        --save-params "$T/$w-dd" &&
        same "$w dist_device_sync, 2 workers x 2 devices = local x4 batch 32" "$T/$w-dd" "$T/$w-l4" 1e-5
    run "$w-allreduce" "${MPI[@]}" -np 2 "$MX" "${A[@]}" --kvstore dist_allreduce --batch 16 \
        --save-params "$T/$w-ar" &&
        same "$w dist_allreduce, 2 workers x batch 16 = local x2 batch 32" "$T/$w-ar" "$T/$w-l2" 0
done

# ---- 2. dist_async: staleness, and accuracy next to dist_sync
A=(train --workload lenet --quiet)
if run async1 "${MPI[@]}" -np 2 "$MX" "${A[@]}" --dataset synthetic --steps 20 --kvstore dist_async --batch 32 \
    --record "$T/async1.h5"; then
    m=$(attr "$T/async1.h5" staleness_max)
    [ "$m" = 0 ] && pass "dist_async with 1 worker: staleness max 0" || fail "dist_async with 1 worker: staleness max '$m', expected 0"
fi
FASHION_DIR=/usr/share/datasets/fashion-mnist
if [ -d "$FASHION_DIR" ]; then
    # The default recipe (lr 0.05, cosine, momentum 0.9), batch 64 per worker (global 128):
    # dist_sync reaches 0.8800 (deterministic); dist_async is not (updates interleave as the
    # ranks are scheduled). With one momentum shared by the workers' pushes it reached 0.8459
    # and 0.8545, which this check fails; with a momentum per worker and the look-ahead
    # answer (kvstore/ps_server.c), 0.8685-0.8796 in eight runs (at worst 1.15 points below). So one
    # retry of the async run, which that spread rarely needs, and the shared momentum fails.
    EP=(--epochs 1 --batch 64)
    close() { awk -v s="$1" -v a="$2" 'BEGIN { d = s - a; if (d < 0) d = -d; exit !(s > 0.7 && d <= 0.015) }'; }
    start=$(date +%s)
    if run epoch-sync "${MPI[@]}" -np 4 "$MX" "${A[@]}" "${EP[@]}" --kvstore dist_sync --record "$T/sync.h5"; then
        s=$(attr "$T/sync.h5" final_test_acc)
        for try in 1 2; do
            rm -f "$T/async.h5"
            run epoch-async "${MPI[@]}" -np 4 "$MX" "${A[@]}" "${EP[@]}" --kvstore dist_async \
                --record "$T/async.h5" || break
            a=$(attr "$T/async.h5" final_test_acc)
            echo "   try $try: an epoch of lenet on Fashion-MNIST: dist_sync acc $s, dist_async acc $a ($(( $(date +%s) - start )) s)"
            close "$s" "$a" && break
        done
        mean=$(attr "$T/async.h5" staleness_mean) mx=$(attr "$T/async.h5" staleness_max)
        close "$s" "$a" && pass "dist_async accuracy $a within 1.5 points of dist_sync's $s" ||
            fail "dist_async accuracy $a vs dist_sync $s: more than 1.5 points apart (or sync did not learn)"
        awk -v m="$mx" 'BEGIN { exit !(m > 0) }' && pass "dist_async with 2 workers: staleness mean $mean, max $mx above 0" ||
            fail "dist_async with 2 workers: staleness max '$mx', expected above 0"
    fi
else
    echo "skip: the async accuracy check needs Fashion-MNIST in $FASHION_DIR (apt-get install dataset-fashion-mnist)"
fi

# ---- 3. the record: every rank, the workers' spread
if run ranks "${MPI[@]}" -np 4 "$MX" train --workload mlp --dataset synthetic --steps 10 --kvstore dist_sync \
    --batch 16 --quiet --record "$T/ranks.h5"; then
    rows=$(h5dump -H -d /runs/r0000/ranks "$T/ranks.h5" 2>/dev/null | sed -n 's/.*SIMPLE { ( \([0-9]*\) ).*/\1/p')
    [ "$rows" = 4 ] && pass "the record holds the 4 ranks' rows" || fail "rank table has '$rows' rows, expected 4"
    for f in workers servers; do echo "$f=$(attr "$T/ranks.h5" $f)"; done >"$T/ws"
    grep -qx "workers=2" "$T/ws" && grep -qx "servers=2" "$T/ws" && pass "recorded 2 workers, 2 servers" ||
        { fail "workers/servers recorded as: $(tr '\n' ' ' <"$T/ws")"; }
    lo=$(attr "$T/ranks.h5" worker_step_min) hi=$(attr "$T/ranks.h5" worker_step_max)
    awk -v a="$lo" -v b="$hi" 'BEGIN { exit !(a > 0 && b >= a) }' && pass "workers' median step times span $lo..$hi s" ||
        fail "worker spread min '$lo' max '$hi'"
fi

# ---- 4. roles from MXNet's variables, and launch errors
run dmlc "${MPI[@]}" -np 1 -x DMLC_ROLE=server "$MX" train --workload mlp --dataset synthetic --steps 5 \
    --kvstore dist_sync --batch 16 --quiet : -np 2 -x DMLC_ROLE=worker "$MX" train --workload mlp \
    --dataset synthetic --steps 5 --kvstore dist_sync --batch 16 --quiet &&
    { grep -q "2 workers, 1 servers" "$T/dmlc.out" && pass "DMLC_ROLE per rank: rank 0 a server, 2 workers" ||
        { fail "DMLC_ROLE roles not honoured"; indent "$T/dmlc.out"; }; }
expect2() { # expect2 WHAT NEEDLE CMD...: exit 2 with NEEDLE in stderr
    local what=$1 needle=$2
    shift 2
    "$@" >"$T/e.out" 2>"$T/e.err"
    local rc=$?
    if [ $rc = 2 ] && grep -q -- "$needle" "$T/e.err"; then pass "$what: exit 2, says '$needle'"
    else fail "$what: exit $rc, stderr:"; indent "$T/e.err"; fi
}
T1=(train --workload mlp --dataset synthetic --steps 2 --batch 16 --quiet)
expect2 "dist_sync without mpirun" "train --np 4" "$MX" "${T1[@]}" --kvstore dist_sync
expect2 "odd rank count, no --servers" "give --servers" "${MPI[@]}" -np 3 "$MX" "${T1[@]}" --kvstore dist_sync
expect2 "--servers leaving no worker" "accepted 1..2" "${MPI[@]}" -np 3 "$MX" "${T1[@]}" --kvstore dist_sync --servers 3
expect2 "--servers with dist_allreduce" "accepted 0" "${MPI[@]}" -np 2 "$MX" "${T1[@]}" --kvstore dist_allreduce --servers 1
expect2 "DMLC_NUM_WORKER disagreeing" "DMLC_NUM_WORKER=3" "${MPI[@]}" -x DMLC_NUM_WORKER=3 -np 4 "$MX" "${T1[@]}" --kvstore dist_sync
expect2 "more servers than mlp's 6 keys can use" "accepted 1..6 servers" "${MPI[@]}" -np 9 "$MX" "${T1[@]}" --kvstore dist_sync --servers 7
expect2 "one-process kvstore under mpirun" "accepted under mpirun" "${MPI[@]}" -np 2 "$MX" "${T1[@]}" --kvstore local

# a loss that turns inf on one worker's slice must not stop that worker alone (the others
# would wait for its pushes for ever): the job runs to its end, recorded diverged, exit 1
timeout 120 "${MPI[@]}" -np 4 "$MX" train --workload lenet --dataset synthetic --steps 30 --kvstore dist_sync \
    --batch 16 --lr 1000 --quiet --record "$T/div.h5" >"$T/div.out" 2>"$T/div.err"
rc=$?
st=$(attr "$T/div.h5" status | tr -d '"')
[ $rc = 1 ] && [ "$st" = diverged ] && pass "a diverging MPI job ends (exit 1, recorded '$st')" ||
    { fail "a diverging MPI job: exit $rc (124: it hung), status '$st'"; indent "$T/div.err"; }

# ---- 5. a worker killed mid-run ends the job, naming the rank
"${MPI[@]}" -np 4 "$MX" train --workload lenet --dataset synthetic --steps 100000 --kvstore dist_sync --batch 16 \
    --quiet >"$T/kill.out" 2>"$T/kill.err" &
job=$!
sleep 3
# the second rank's pid, from /proc (procps may be absent)
victim=$(for f in /proc/[0-9]*/cmdline; do
    tr '\0' ' ' <"$f" 2>/dev/null | grep -q "^$MX train --workload lenet --dataset synthetic --steps 100000" &&
        basename "$(dirname "$f")"
done | sort -n | sed -n 2p)
t0=$(date +%s)
[ -n "$victim" ] && kill -9 "$victim"
for _ in $(seq 60); do kill -0 $job 2>/dev/null || break; sleep 0.5; done
if kill -0 $job 2>/dev/null; then
    fail "a killed rank: the job still runs 30 s later"
    kill -9 $job
    for f in /proc/[0-9]*/cmdline; do
        tr '\0' ' ' <"$f" 2>/dev/null | grep -q "steps 100000" && kill -9 "$(basename "$(dirname "$f")")"
    done
else
    wait $job
    rc=$?
    took=$(( $(date +%s) - t0 ))
    if [ $rc != 0 ] && grep -q "rank [0-9]" "$T/kill.err"; then
        pass "a killed rank ended the job in ${took} s (mpirun exit $rc): $(grep -o 'process rank [0-9]*[^.]*' "$T/kill.err" | head -1)"
    else fail "a killed rank: exit $rc after ${took} s, stderr:"; indent "$T/kill.err"; fi
fi

echo "test_dist_train: $npass passed, $nfail failed"
[ $nfail = 0 ]
