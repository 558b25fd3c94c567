#!/usr/bin/env bash
# The kernel switches (engine/backend/switches.h): `mxbench info` lists every variable with
# its values and marks the one that runs; a value not in the table is refused by info, train
# and sweep (exit 2) with a message naming the variable, the value and the accepted values,
# before anything is written; the default's own name is accepted; and a switch changes what
# runs (the convolution line of `mxbench info`).
# usage: test_kernel_switches.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u
MX=${1:?usage: test_kernel_switches.sh MXBENCH SOURCE_DIR BUILD_DIR}
# shellcheck source=tests/e2e-lib.sh
. "${2:?usage: test_kernel_switches.sh MXBENCH SOURCE_DIR BUILD_DIR}/tests/e2e-lib.sh" test_kernel_switches "$MX"
trap 'rm -rf "$T"' EXIT

mx_expect info 0 "mxbench info" info
for pair in MXBENCH_CONV=auto MXBENCH_GEMM=own MXBENCH_BF16=native MXBENCH_FUSE=on MXBENCH_GPU=tested; do
    grep -qx "  $pair" "$T/info.out" && pass "info lists $pair (the default)" || fail "info lacks '  $pair'"
done
grep -q '^   \*auto ' "$T/info.out" && pass "info marks the default conv value as running" ||
    fail "no '*auto' line in: $(grep -A4 MXBENCH_CONV "$T/info.out")"

MXBENCH_CONV=gemm mx_expect info-gemm 0 "mxbench info under MXBENCH_CONV=gemm" info
grep -qx "  MXBENCH_CONV=gemm" "$T/info-gemm.out" && grep -q '^   \*gemm ' "$T/info-gemm.out" &&
    pass "MXBENCH_CONV=gemm is listed and marked" || fail "$(grep -A4 MXBENCH_CONV "$T/info-gemm.out")"
grep -q "im2col + GEMM for every shape" "$T/info-gemm.out" && pass "the convolution line says im2col + GEMM" ||
    fail "conv2d line: $(grep conv2d "$T/info-gemm.out")"
MXBENCH_CONV=auto mx_expect info-auto 0 "the default's own name (MXBENCH_CONV=auto) is accepted" info

for cmd in info "train --workload mlp --dataset synthetic --steps 2" "sweep --gpus 1 --workload mlp --steps 2 --out $T/s.h5"; do
    name=${cmd%% *}
    # shellcheck disable=SC2086
    MXBENCH_FUSE=maybe mx_expect "bad-$name" 2 "mxbench $name refuses MXBENCH_FUSE=maybe" $cmd
    grep -q "MXBENCH_FUSE='maybe': accepted on, off" "$T/bad-$name.err" && pass "$name names the value and the accepted ones" ||
        fail "$name's message: $(cat "$T/bad-$name.err")"
done
[ ! -e "$T/s.h5" ] && pass "the refused sweep wrote no results file" || fail "the refused sweep wrote $T/s.h5"

echo "test_kernel_switches: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
