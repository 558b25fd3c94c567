#!/usr/bin/env bash
# The model and layer strategies through `mxbench train` and the record (the unit tests,
# test_model and test_layer_parallel, check the engine side):
#  1. the same weights as one device after 20 steps of mlp (--save-params): model on 2
#     devices with one micro-batch, and with 4 micro-batches under gpipe and 1f1b; layer on
#     2 devices;
#  2. the record: model's bubble, theory, bytes between stages, micro-batches in flight, the
#     device table with the cut and the layer table; layer's collective bytes and memory per
#     device below a data-parallel replica's; `report` shows both tables;
#  3. a model run's cut is the hand partition asked for.
# Tolerances: a pipeline stage computes what one device computes on the same samples (same
# GEMM shapes per micro-batch), so model with one micro-batch is compared at 1e-6 of the
# largest weight; with micro-batches the reference is one device accumulating the same
# micro-batches (model on 1 device: the same split), also 1e-6. Layer sums each input
# gradient over the devices' partial products, in another order than one device's GEMM, so
# it is compared with data on 1 device at 1e-4 (mlp after 20 steps).
# usage: test_parallel.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u

MX=${1:?usage: test_parallel.sh MXBENCH SOURCE_DIR BUILD_DIR}
BUILD=${3:?usage: test_parallel.sh MXBENCH SOURCE_DIR BUILD_DIR}
case $MX in /*) ;; *) MX=$PWD/$MX ;; esac
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
DIFF=$BUILD/params_diff
command -v h5dump >/dev/null 2>&1 || { echo "test_parallel: h5dump not found (apt-get install hdf5-tools)"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/mxbench-test_parallel.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

npass=0 nfail=0
pass() { npass=$((npass + 1)); echo "ok: $*"; }
fail() { nfail=$((nfail + 1)); echo "FAIL: $*"; }
attr() { h5dump -a "/runs/r0000/$2" "$1" 2>/dev/null | sed -n 's/^ *(0): *//p' | head -1; }
# run NAME CMD...: runs quietly, failing the test (with its stderr) on a non-zero exit
run() {
    local name=$1
    shift
    if "$@" >"$T/$name.out" 2>"$T/$name.err"; then return 0; fi
    fail "$name: exit $? ($*)"
    tail -n 15 "$T/$name.err" | sed 's/^/    /'
    return 1
}
same() { # desc a b tol
    local out
    if out=$("$DIFF" "$2" "$3" "$4" 2>&1); then pass "$1 ($out)"; else fail "$1: $out"; fi
}

# ---- 1. equivalence with one device
M=(--workload mlp --dataset synthetic --batch 64 --steps 20 --lr 0.05 --threads-per-device 1 --quiet)
run data1 "$MX" train "${M[@]}" --save-params "$T/data1.f32"
run model2 "$MX" train "${M[@]}" --strategy model --gpus 2 --micro-batches 1 --save-params "$T/model2.f32"
same "model on 2 devices, one micro-batch = one device after 20 steps" "$T/model2.f32" "$T/data1.f32" 1e-6
run model1m4 "$MX" train "${M[@]}" --strategy model --gpus 1 --micro-batches 4 --save-params "$T/model1m4.f32"
for s in gpipe 1f1b; do
    run "model2m4$s" "$MX" train "${M[@]}" --strategy model --gpus 2 --micro-batches 4 --schedule $s \
        --save-params "$T/model2m4$s.f32"
    same "model on 2 devices, 4 micro-batches, $s = one device accumulating them" "$T/model2m4$s.f32" \
        "$T/model1m4.f32" 1e-6
done
run layer2 "$MX" train "${M[@]}" --strategy layer --gpus 2 --save-params "$T/layer2.f32"
same "layer on 2 devices = one device after 20 steps" "$T/layer2.f32" "$T/data1.f32" 1e-4

# ---- 2. the record
L=(--workload lenet --dataset synthetic --batch 32 --steps 6 --warmup-steps 1 --lr 0.01 --threads-per-device 1 --quiet)
run rec_model "$MX" train "${L[@]}" --strategy model --gpus 2 --micro-batches 4 --schedule 1f1b --partition 4,6 \
    --record "$T/model.h5"
run rec_layer "$MX" train "${L[@]}" --strategy layer --gpus 2 --record "$T/layer.h5"
run rec_data "$MX" train "${L[@]}" --gpus 1 --record "$T/data.h5"
if [ -s "$T/model.h5" ]; then
    theory=$(attr "$T/model.h5" bubble_theory) bubble=$(attr "$T/model.h5" bubble)
    stage=$(attr "$T/model.h5" stage_bytes_per_step) inflight=$(attr "$T/model.h5" inflight_max)
    awk -v t="$theory" -v b="$bubble" -v s="$stage" -v i="$inflight" 'BEGIN {
        exit !(t > 0.199 && t < 0.201 && b >= 0 && b < 1 && s > 0 && i >= 1 && i <= 2) }' &&
        pass "model record: bubble $bubble against theory $theory (k=2, m=4), $stage bytes between stages, $inflight in flight (1f1b: at most 2)" ||
        fail "model record: bubble '$bubble', theory '$theory' (expected 0.2), stage bytes '$stage', in flight '$inflight' (expected 1..2)"
    h5dump -d /runs/r0000/devices "$T/model.h5" >"$T/devices.txt" 2>&1
    # the cut asked for: stage 0 holds layers [0, 4), stage 1 [4, 10)
    tr -d ' \n' <"$T/devices.txt" | grep -q '(0):{0,0,4,.*(1):{1,4,10,' &&
        pass "model device table holds the cut 4,6" || fail "model device table: expected the cut [0,4) [4,10): $(head -40 "$T/devices.txt")"
    h5dump -d /runs/r0000/layers "$T/model.h5" >/dev/null 2>&1 && pass "model run has a layer table" ||
        fail "model run: no /runs/r0000/layers"
    "$MX" report "$T/model.h5" >"$T/report.txt" 2>&1
    grep -q "devices of r0000 (model, 4 micro-batches, 1f1b)" "$T/report.txt" && grep -q "layers of r0000" "$T/report.txt" &&
        pass "report shows the model run's device and layer tables" || fail "report: $(cat "$T/report.txt")"
fi
if [ -s "$T/layer.h5" ] && [ -s "$T/data.h5" ]; then
    tp=$(attr "$T/layer.h5" tp_bytes_per_step) pl=$(attr "$T/layer.h5" mem_params) pd=$(attr "$T/data.h5" mem_params)
    awk -v tp="$tp" -v a="$pl" -v b="$pd" 'BEGIN { exit !(tp > 0 && a > 0 && a <= 0.55 * b) }' &&
        pass "layer record: $tp bytes of collectives per step; parameters per device $pl bytes, $(awk -v a="$pl" -v b="$pd" 'BEGIN {printf "%.3f", a / b}') of one device's" ||
        fail "layer record: tp bytes '$tp', parameter bytes per device '$pl' against one device's '$pd' (expected at most 0.55 of it)"
fi

echo "test_parallel: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
