#!/usr/bin/env bash
# A sweep's row says what ran: for each strategy, kvstore, compressor and precision, the row
# `mxbench sweep` records equals, configuration field by field, what `mxbench train --record`
# records for the same configuration typed by hand (the measurements aside). The fields are
# every entry of the sweep's axes table (results/axes.c) that a record holds, plus the
# kernels and devices; the sweep's batch and batch mode are its own way of writing the global
# batch, so the global batch is compared instead. And a dist_async epoch line counts what the
# summary counts.
# usage: test_sweep_fields.sh MXBENCH SOURCE_DIR BUILD_DIR
. "$(dirname "$0")/e2e-lib.sh" test_sweep_fields "$1"
SRC=$2

# name=value for every scalar attribute of one run
attrs() { h5dump -A -g "/runs/$2" "$1" | awk '/ATTRIBUTE "/ { match($0, /"[^"]*"/); n = substr($0, RSTART + 1, RLENGTH - 2) }
    /^ *\(0\):/ { sub(/^ *\(0\): */, ""); print n "=" $0 }'; }
FIELDS=$(grep -o 'AX([a-z_0-9]*' "$SRC/results/axes.c" | sed 's/AX(//' | grep -vx 'field\|batch\|batch_mode')
FIELDS="$FIELDS amp_kernels device_type tf32 status"
[ "$(echo "$FIELDS" | wc -w)" -ge 30 ] || { echo "test_sweep_fields: read only $(echo $FIELDS | wc -w) fields from axes.c"; exit 1; }

COMMON=(--workload mlp --dataset synthetic --steps 8 --warmup-steps 2)
id=0
# same NAME "SWEEP OPTIONS" "TRAIN OPTIONS" [mpi]: one sweep row against one train run
same() {
    local name=$1 sweep=$2 train=$3 mpi=${4:-}
    # shellcheck disable=SC2086 # option lists
    run "sweep-$name" "$MX" sweep "${COMMON[@]}" $sweep --out "$T/$name-sweep.h5" || return
    [ "$(attr "$T/$name-sweep.h5" status)" = '"ok"' ] || { fail "$name: the sweep's row is $(attr "$T/$name-sweep.h5" status)"; return; }
    if [ -n "$mpi" ]; then
        # shellcheck disable=SC2086
        run "train-$name" "$MX" train --np "$mpi" "${COMMON[@]}" $train --quiet --record "$T/$name-train.h5" || return
    else
        # shellcheck disable=SC2086
        run "train-$name" "$MX" train "${COMMON[@]}" $train --quiet --record "$T/$name-train.h5" || return
    fi
    attrs "$T/$name-sweep.h5" r0000 >"$T/$name.s"
    attrs "$T/$name-train.h5" r0000 >"$T/$name.t"
    local bad="" f s t
    for f in $FIELDS; do
        s=$(grep -m1 "^$f=" "$T/$name.s") t=$(grep -m1 "^$f=" "$T/$name.t")
        [ -n "$s" ] || { bad="$bad $f (not in the sweep's row)"; continue; }
        [ "$s" = "$t" ] || bad="$bad [sweep $s, train ${t:-none}]"
    done
    if [ -z "$bad" ]; then pass "$name: $(echo $FIELDS | wc -w) fields equal"; else fail "$name:$bad"; fi
}

same data-device "--strategies data --gpus 2 --kvstore device" "--gpus 2 --batch 256 --kvstore device"
same data-2bit "--strategies data --gpus 2 --kvstore device --compression 2bit" \
    "--gpus 2 --batch 256 --kvstore device --compression 2bit"
same data-topk-bf16 "--strategies data --gpus 2 --kvstore device --compression topk --amp bf16" \
    "--gpus 2 --batch 256 --kvstore device --compression topk --amp bf16"
same data-fp16-fp16 "--strategies data --gpus 2 --kvstore local --compression none --amp fp16" \
    "--gpus 2 --batch 256 --kvstore local --amp fp16"
same data-gc-fp16 "--strategies data --gpus 2 --kvstore device --compression fp16" \
    "--gpus 2 --batch 256 --kvstore device --compression fp16"
same model-defaults "--strategies model --gpus 2" "--strategy model --gpus 2 --batch 256"
same model-gpipe "--strategies model --gpus 2 --micro-batches 2 --schedule gpipe" \
    "--strategy model --gpus 2 --batch 256 --micro-batches 2 --schedule gpipe"
same layer "--strategies layer --gpus 2" "--strategy layer --gpus 2 --batch 256"
same one-device "--strategies data --gpus 1" "--gpus 1 --batch 128"
if command -v mpirun >/dev/null 2>&1 && "$MX" info | grep -q dist_sync; then
    same dist-sync "--strategies data --gpus 2 --kvstore dist_sync --threads-per-device 1" \
        "--kvstore dist_sync --batch 128 --threads-per-device 1" 4
    same dist-allreduce "--strategies data --gpus 2 --kvstore dist_allreduce --compression fp16 --threads-per-device 1" \
        "--kvstore dist_allreduce --batch 128 --compression fp16 --threads-per-device 1" 2
    # a dist_async worker trains its share of each step: the epoch line counts the job's
    # samples, as the summary's aggregate does (not worker 0's half)
    if run "async-epoch" "$MX" train --np 4 --workload mlp --kvstore dist_async --batch 64 --epochs 1 \
        --threads-per-device 1; then
        ep=$(sed -n 's/^epoch 1\/1 .*  \([0-9]*\) samples\/s .*/\1/p' "$T/async-epoch.out")
        agg=$(sed -n 's/.* \([0-9.]*\) aggregate.*/\1/p' "$T/async-epoch.out")
        if [ -n "$ep" ] && [ -n "$agg" ] && awk -v e="$ep" -v a="$agg" 'BEGIN { exit !(e >= 0.98 * a && e <= 1.02 * a) }'; then
            pass "dist_async: the epoch line's $ep samples/s is the summary's aggregate $agg"
        else
            fail "dist_async: the epoch line says '$ep' samples/s, the summary '$agg' aggregate"
            indent "$T/async-epoch.out"
        fi
    fi
else
    echo "test_sweep_fields: no mpirun or no MPI build: the dist_* rows are not compared"
fi

echo "test_sweep_fields: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
