#!/usr/bin/env bash
# End-to-end tests of the mxbench command line: help, usage errors (exit 2 with a message
# naming the bad value), bad input files (exit 2 naming the file), info.
# usage: test_cli.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u

MX=${1:?usage: test_cli.sh MXBENCH SOURCE_DIR BUILD_DIR}
case $MX in /*) ;; *) MX=$PWD/$MX ;; esac
[ -x "$MX" ] || { echo "test_cli: mxbench binary '$MX' is missing or not executable"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/mxbench-test_cli.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

npass=0 nfail=0
pass() { npass=$((npass + 1)); echo "ok: $*"; }
fail() { nfail=$((nfail + 1)); echo "FAIL: $*"; }
show() { # the captured output of the last command, indented, for failure messages
    sed -e 's/^/    stdout: /' "$T/out" | head -20
    sed -e 's/^/    stderr: /' "$T/err" | head -20
}

# run CMD...: runs it with stdout/stderr captured in $T/out and $T/err; status in $rc.
run() {
    "$@" >"$T/out" 2>"$T/err"
    rc=$?
}

# expect CODE DESC [--stderr TEXT]... [--stdout TEXT]... -- CMD...: one check.
expect() {
    local want=$1 desc=$2
    shift 2
    local -a in_err=() in_out=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        case $1 in
            --stderr) in_err+=("$2"); shift 2 ;;
            --stdout) in_out+=("$2"); shift 2 ;;
            *) echo "test_cli.sh: bad expect argument '$1'" >&2; exit 2 ;;
        esac
    done
    shift # --
    run "$@"
    local problems=""
    [ "$rc" -eq "$want" ] || problems+=" expected exit $want, saw $rc;"
    local s
    for s in "${in_err[@]+"${in_err[@]}"}"; do
        grep -qF -- "$s" "$T/err" || problems+=" expected stderr to contain '$s';"
    done
    for s in "${in_out[@]+"${in_out[@]}"}"; do
        grep -qF -- "$s" "$T/out" || problems+=" expected stdout to contain '$s';"
    done
    if [ -z "$problems" ]; then
        pass "$desc"
    else
        fail "$desc ($*):$problems"
        show
    fi
}

# ---- help: exit 0, usage on stdout
expect 0 "mxbench --help" --stdout "usage: mxbench COMMAND" --stdout "sweep" -- "$MX" --help
expect 0 "mxbench -h" --stdout "usage: mxbench COMMAND" -- "$MX" -h
expect 2 "mxbench without a command: usage on stderr, exit 2" --stderr "usage: mxbench" -- "$MX"
for cmd in train sweep report compare plot info; do
    expect 0 "mxbench $cmd --help" --stdout "usage: mxbench $cmd" -- "$MX" "$cmd" --help
    [ -s "$T/err" ] && fail "mxbench $cmd --help wrote to stderr: $(head -c 200 "$T/err")"
done
expect 0 "mxbench train -h lists its options" --stdout "--workload" --stdout "--epochs" -- "$MX" train -h
expect 0 "mxbench --version" --stdout "mxbench" -- "$MX" --version

# ---- mxbench help [--markdown] [COMMAND]: the list, and each command's own --help
expect 0 "mxbench help lists the commands" --stdout "usage: mxbench COMMAND" --stdout "mxbench help COMMAND" -- \
    "$MX" help
cmp -s "$T/out" <("$MX" --help) || fail "mxbench help and mxbench --help differ"
commands=$(sed -n '/^commands:/,/^$/p' "$T/out" | awk 'NF > 1 { print $1 }')
[ -n "$commands" ] || fail "mxbench help: no command listed"
for cmd in $commands; do
    "$MX" "$cmd" --help >"$T/direct" 2>&1
    expect 0 "mxbench help $cmd" --stdout "usage: mxbench $cmd" -- "$MX" help "$cmd"
    if cmp -s "$T/out" "$T/direct"; then
        pass "mxbench help $cmd prints what mxbench $cmd --help prints"
    else
        fail "mxbench help $cmd differs from mxbench $cmd --help:"
        diff -u "$T/direct" "$T/out" | head -20 | sed 's/^/    /'
    fi
    expect 0 "mxbench help --markdown $cmd" --stdout "| option | argument | default | meaning |" \
        --stdout '| `-h`, `--help` |' -- "$MX" help --markdown "$cmd"
done
expect 0 "mxbench help --markdown train: a row per option" --stdout '| `--epochs` | `N`: 1..10000 | 1 |' -- \
    "$MX" help train --markdown
expect 2 "mxbench help nosuch" --stderr "unknown command 'nosuch'" --stderr "commands are: train" -- "$MX" help nosuch
[ -s "$T/out" ] && fail "mxbench help nosuch printed to stdout: $(head -c 200 "$T/out")"
expect 2 "mxbench help --markdown without a command" --stderr "--markdown needs a COMMAND" -- "$MX" help --markdown
expect 2 "mxbench help with an unknown option" --stderr "'--html'" -- "$MX" help --html train
expect 2 "mxbench help with two commands" --stderr "'sweep'" -- "$MX" help train sweep
expect 0 "mxbench help help" --stdout "usage: mxbench help [--markdown] [COMMAND]" -- "$MX" help help

# ---- usage errors: exit 2, stderr names the bad value
expect 2 "unknown command" --stderr "'frobnicate'" -- "$MX" frobnicate
expect 2 "unknown option" --stderr "--no-such-option" -- "$MX" train --no-such-option
expect 2 "unknown short option" --stderr "'-x'" -- "$MX" train -x
expect 2 "missing option value" --stderr "--epochs" --stderr "needs a value" -- "$MX" train --epochs
expect 2 "bad integer" --stderr "--epochs" --stderr "'x'" -- "$MX" train --epochs x
expect 2 "bad integer (trailing junk)" --stderr "'3e'" -- "$MX" train --epochs 3e
expect 2 "bad number" --stderr "--lr" --stderr "'abc'" -- "$MX" train --lr abc
expect 2 "bad choice" --stderr "'vgg'" --stderr "lenet" -- "$MX" train --workload vgg
expect 2 "bad choice (--option=value)" --stderr "'vgg'" -- "$MX" train --workload=vgg
expect 2 "flag given a value" --stderr "--quiet" -- "$MX" train --quiet=yes
expect 2 "unexpected positional argument" --stderr "'extra'" -- "$MX" train extra
expect 2 "train --gpus 0" --stderr "--gpus: 0 is out of range; accepted 1..64" -- "$MX" train --gpus 0 --dataset synthetic --steps 1
expect 2 "train --gpus 65 (beyond the device limit)" --stderr "--gpus: 65 is out of range" -- "$MX" train --gpus 65 --dataset synthetic --steps 1
expect 2 "train --lr -1" --stderr "-1" -- "$MX" train --lr -1 --dataset synthetic --steps 1
expect 2 "train --epochs 0" --stderr "--epochs: 0 is out of range; accepted 1..10000" -- "$MX" train --epochs 0 --dataset synthetic
expect 2 "train --batch 0" --stderr "--batch: 0 is out of range; accepted 1..65536" -- "$MX" train --batch 0 --dataset synthetic --steps 1
expect 2 "train --repeat 0" --stderr "--repeat: 0 is out of range; accepted 1..1000" -- "$MX" train --repeat 0 --dataset synthetic --steps 1
expect 2 "train --work-load with a bad item" --stderr "'1,x'" -- "$MX" train --work-load 1,x --dataset synthetic --steps 1
expect 2 "sweep bad list --gpus 1,x" --stderr "'1,x'" -- "$MX" sweep --gpus 1,x --dataset synthetic --steps 5 --out "$T/never.h5"
[ -e "$T/never.h5" ] && fail "sweep with a bad --gpus list created its output file"
expect 2 "sweep --gpus 0" --stderr "'0'" -- "$MX" sweep --gpus 0 --dataset synthetic --steps 5 --out "$T/never.h5"
expect 2 "sweep --gpus 65" --stderr "65" -- "$MX" sweep --gpus 65 --dataset synthetic --steps 5 --out "$T/never.h5"
expect 2 "sweep bad strategy in a list" --stderr "'bogus'" -- "$MX" sweep --strategies data,bogus --dataset synthetic --steps 5 --out "$T/never.h5"
expect 2 "sweep bad kvstore in a list" --stderr "'nccl'" -- "$MX" sweep --kvstore device,nccl --dataset synthetic --steps 5 --out "$T/never.h5"
expect 2 "sweep bad lr list" --stderr "'0.1,y'" -- "$MX" sweep --lr 0.1,y --dataset synthetic --steps 5 --out "$T/never.h5"

# ---- every count has an upper bound checked at parsing; train and sweep accept the same
S=(--dataset synthetic --steps 2)
expect 2 "train --batch near INT_MAX" --stderr "--batch: 2147483647 is out of range; accepted 1..65536" -- "$MX" train --batch 2147483647 "${S[@]}"
expect 2 "train --repeat near INT_MAX" --stderr "--repeat: 2147483647 is out of range" -- "$MX" train --repeat 2147483647 "${S[@]}"
expect 2 "train --epochs near INT_MAX" --stderr "--epochs: 2147483647 is out of range" -- "$MX" train --epochs 2147483647 --dataset synthetic
expect 2 "train --steps beyond int" --stderr "--steps: 99999999999 is out of range" -- "$MX" train --steps 99999999999 --dataset synthetic
expect 2 "train --threads-per-device 100000" --stderr "--threads-per-device: 100000 is out of range; accepted 1..256" -- "$MX" train --threads-per-device 100000 "${S[@]}"
expect 2 "train devices x threads over the total" --stderr "64 devices x 256 threads" -- "$MX" train --gpus 64 --threads-per-device 256 --batch 64 "${S[@]}"
expect 2 "train --steps x --repeat over the total" --stderr "4000000 steps x 2 repeats" -- "$MX" train --steps 4000000 --repeat 2 --dataset synthetic
expect 2 "train --epochs x --repeat over the total (data dependent)" --stderr "accepted at most 4000000" -- "$MX" train --epochs 10000 --repeat 1000 --batch 1 --dataset synthetic
expect 2 "train --seed -1" --stderr "--seed: -1 is out of range" -- "$MX" train --seed -1 "${S[@]}"
expect 2 "train --steps 0 (no longer a full epoch)" --stderr "--steps: 0 is out of range; accepted 1.." -- "$MX" train --steps 0 --dataset synthetic
expect 2 "train --epochs with --steps" --stderr "--epochs 2 and --steps 3: give one of them" -- "$MX" train --epochs 2 --steps 3 --dataset synthetic
expect 2 "train --target-acc 2" --stderr "--target-acc: 2 is out of range; accepted 0..1" -- "$MX" train --target-acc 2 "${S[@]}"
expect 2 "train --target-acc -1" --stderr "--target-acc: -1 is out of range" -- "$MX" train --target-acc -1 "${S[@]}"
expect 2 "train --target-acc 0" --stderr "--target-acc 0: accepted above 0" -- "$MX" train --target-acc 0 "${S[@]}"
expect 2 "train --lr-schedule step" --stderr "'step' is not accepted; choose one of constant|cosine" -- "$MX" train --lr-schedule step "${S[@]}"
expect 2 "sweep --lr-schedule in a list" --stderr "'linear'" -- "$MX" sweep --lr-schedule cosine,linear --dataset synthetic --steps 5 --out "$T/never.h5"
# the optimizer's options: the word, the ranges, AdamW's settings on SGD, clipping on dist_async
expect 2 "train --optimizer adam" --stderr "'adam' is not accepted; choose one of sgd|adamw" -- "$MX" train --optimizer adam "${S[@]}"
expect 2 "train --beta1 1" --stderr "beta1 1: accepted 0 <= beta1 < 1" -- "$MX" train --optimizer adamw --beta1 1 "${S[@]}"
expect 2 "train --beta2 -0.5" --stderr "--beta2: -0.5 is out of range" -- "$MX" train --optimizer adamw --beta2 -0.5 "${S[@]}"
expect 2 "train --eps 0" --stderr "eps 0: accepted above 0" -- "$MX" train --optimizer adamw --eps 0 "${S[@]}"
expect 2 "train --beta1 with sgd" --stderr "--beta1 applies to --optimizer adamw, not sgd" -- "$MX" train --beta1 0.8 "${S[@]}"
expect 2 "train --clip-norm -1" --stderr "--clip-norm: -1 is out of range; accepted 0..1e+06" -- "$MX" train --clip-norm -1 "${S[@]}"
expect 2 "train --clip-norm nan" --stderr "--clip-norm" -- "$MX" train --clip-norm nan "${S[@]}"
expect 2 "train --clip-norm with dist_async" --stderr "--clip-norm 1 with --kvstore dist_async" -- "$MX" train --clip-norm 1 --kvstore dist_async --gpus 2 --dry-run "${S[@]}"
expect 2 "sweep --optimizer adam" --stderr "'adam'" -- "$MX" sweep --optimizer adam --dataset synthetic --steps 5 --out "$T/never.h5"
expect 2 "sweep --beta1 with sgd rows" --stderr "--beta1 applies to --optimizer adamw" -- "$MX" sweep --beta1 0.8 --gpus 1 --dataset synthetic --steps 5 --out "$T/never.h5"
expect 2 "train --warmup-epochs -1" --stderr "--warmup-epochs: -1 is out of range" -- "$MX" train --warmup-epochs -1 "${S[@]}"
expect 2 "train --warmup-from -1" --stderr "--warmup-from: -1 is out of range" -- "$MX" train --warmup-epochs 1 --warmup-from -1 "${S[@]}"
expect 2 "train --warmup-from 0" --stderr "warmup start lr 0" -- "$MX" train --warmup-epochs 1 --warmup-from 0 "${S[@]}"
expect 2 "train --warmup-from without --warmup-epochs" --stderr "--warmup-from 0.01 needs --warmup-epochs" -- "$MX" train --warmup-from 0.01 "${S[@]}"
expect 2 "train --warmup-epochs beyond the epochs" --stderr "warmup epochs 3: accepted 0..2" -- "$MX" train --warmup-epochs 3 --epochs 2 --dataset synthetic
expect 2 "train --work-load trailing comma" --stderr "'3,1,' has an empty item" -- "$MX" train --gpus 2 --work-load 3,1, "${S[@]}"
expect 2 "train --work-load empty item" --stderr "'3,,1' has an empty item" -- "$MX" train --gpus 2 --work-load 3,,1 "${S[@]}"
expect 2 "train --work-load weights that overflow" --stderr "1e+308 in '1e308,1e308' is out of range" -- "$MX" train --gpus 2 --work-load 1e308,1e308 "${S[@]}"
expect 2 "train --work-load of the wrong length" --stderr "work-load list has 3 entries for 2 devices" -- "$MX" train --gpus 2 --work-load 1,1,1 "${S[@]}"
expect 2 "train --momentum 1" --stderr "momentum 1: accepted 0 <= momentum < 1" -- "$MX" train --momentum 1 "${S[@]}"
expect 2 "train --wd 1" --stderr "weight decay 1" -- "$MX" train --wd 1 "${S[@]}"
expect 2 "train --lr above the bound" --stderr "--lr: 1e7 is out of range; accepted 0..1e+06" -- "$MX" train --lr 1e7 "${S[@]}"
expect 2 "train --strategy bogus" --stderr "'bogus' is not accepted" --stderr "data|model|layer" -- "$MX" train --strategy bogus "${S[@]}"
# the model and layer strategies: what makes no sense is refused before anything runs
expect 2 "train --micro-batches with data" --stderr "--micro-batches applies to the pipeline of --strategy model, not data" -- "$MX" train --micro-batches 4 "${S[@]}"
expect 2 "train --schedule with layer" --stderr "--schedule applies to the pipeline of --strategy model, not layer" -- "$MX" train --strategy layer --gpus 2 --schedule 1f1b "${S[@]}"
expect 2 "train --partition with data" --stderr "--partition applies to the pipeline" -- "$MX" train --partition 3,3 --gpus 2 "${S[@]}"
expect 2 "train --schedule bogus" --stderr "'bogus'" --stderr "gpipe|1f1b" -- "$MX" train --strategy model --schedule bogus "${S[@]}"
expect 2 "train --micro-batches 0" --stderr "--micro-batches: 0 is out of range" -- "$MX" train --strategy model --micro-batches 0 "${S[@]}"
expect 2 "train --work-load with model" --stderr "--work-load with --strategy model" -- "$MX" train --strategy model --gpus 2 --work-load 3,1 "${S[@]}"
expect 2 "train model on more devices than layers" --stderr "model strategy on 8 devices: mlp has 6 top-level layers" --stderr "accepted 1..6 devices" -- "$MX" train --strategy model --gpus 8 --workload mlp "${S[@]}"
expect 2 "train model with a partition that does not cover the layers" --stderr "--partition 3,2: covers 5 layers, the model has 6" -- "$MX" train --strategy model --gpus 2 --workload mlp --partition 3,2 "${S[@]}"
expect 2 "train model with a partition of the wrong length" --stderr "--partition 2,2,2: more than the 2 stages" -- "$MX" train --strategy model --gpus 2 --workload mlp --partition 2,2,2 "${S[@]}"
expect 2 "train model with more micro-batches than samples" --stderr "64 micro-batches of a batch of 32" -- "$MX" train --strategy model --gpus 2 --batch 32 --micro-batches 64 "${S[@]}"
expect 2 "train layer on more devices than the last layer's units" --stderr "layer strategy on 16 devices" --stderr "10 units" -- "$MX" train --strategy layer --gpus 16 --workload mlp --batch 32 "${S[@]}"
# gradient compression: where nothing is exchanged, or MXNet refuses it, it is refused
expect 2 "train --compression bogus" --stderr "'bogus'" --stderr "none|2bit|topk|fp16" -- "$MX" train --gpus 2 --compression bogus "${S[@]}"
expect 2 "train --compression 2bit with local" --stderr "compression 2bit with kvstore local" --stderr "MXNet refuses it too" -- "$MX" train --gpus 2 --kvstore local --compression 2bit "${S[@]}"
expect 2 "train --compression on one device" --stderr "--compression fp16 on one device: nothing is exchanged" -- "$MX" train --compression fp16 "${S[@]}"
expect 2 "train --compression with model" --stderr "--compression topk with --strategy model" -- "$MX" train --strategy model --gpus 2 --compression topk "${S[@]}"
expect 2 "train --threshold without 2bit" --stderr "--threshold 0.3 applies to --compression 2bit, not fp16" -- "$MX" train --gpus 2 --compression fp16 --threshold 0.3 "${S[@]}"
expect 2 "train --topk-ratio 0" --stderr "topk ratio 0: accepted above 0 and at most 1" -- "$MX" train --gpus 2 --compression topk --topk-ratio 0 "${S[@]}"
expect 2 "train --threshold 0" --stderr "2bit threshold 0: accepted above 0" -- "$MX" train --gpus 2 --compression 2bit --threshold 0 "${S[@]}"
expect 2 "train --warmup-steps past the epoch's steps" --stderr "--warmup-steps 40 leaves no timed step of the 32 steps" -- "$MX" train --warmup-steps 40 --epochs 1 --dataset synthetic
expect 2 "sweep --epochs with --steps" --stderr "--epochs 2 and --steps 3: give one of them" -- "$MX" sweep --epochs 2 --steps 3 --dataset synthetic --out "$T/never.h5"
expect 2 "sweep --threads-per-device 0" --stderr "--threads-per-device: 0 is out of range; accepted 1..256" -- "$MX" sweep --threads-per-device 0 "${S[@]}" --out "$T/never.h5"
expect 2 "sweep --steps 0" --stderr "--steps: 0 is out of range" -- "$MX" sweep --steps 0 --dataset synthetic --out "$T/never.h5"
expect 2 "sweep --gpus trailing comma" --stderr "'1,2,' has an empty item" -- "$MX" sweep --gpus 1,2, "${S[@]}" --out "$T/never.h5"
expect 2 "sweep --kvstore empty item" --stderr "'local,,device' has an empty item" -- "$MX" sweep --kvstore local,,device "${S[@]}" --out "$T/never.h5"
expect 2 "sweep --batch near INT_MAX" --stderr "2147483647 in '2147483647' is out of range; accepted 1..65536" -- "$MX" sweep --batch 2147483647 "${S[@]}" --out "$T/never.h5"
expect 2 "sweep --repeat near INT_MAX" --stderr "--repeat: 2147483647 is out of range" -- "$MX" sweep --repeat 2147483647 "${S[@]}" --out "$T/never.h5"
expect 2 "sweep --timeout 0" --stderr "--timeout 0: accepted above 0" -- "$MX" sweep --timeout 0 "${S[@]}" --out "$T/never.h5"
expect 2 "sweep --target-acc 2" --stderr "--target-acc: 2 is out of range" -- "$MX" sweep --target-acc 2 "${S[@]}" --out "$T/never.h5"
expect 2 "sweep --retry-failed without --resume" --stderr "--retry-failed goes with --resume" -- "$MX" sweep --retry-failed "${S[@]}" --out "$T/never.h5"
# what only the child's validation sees is checked for every run before the first starts
expect 2 "sweep --momentum 1 (train's check, before any run)" --stderr "momentum 1: accepted 0 <= momentum < 1" --stderr "nothing was run" -- "$MX" sweep --momentum 1 --dataset synthetic --steps 10 --out "$T/never.h5"
expect 2 "sweep --warmup-steps past --steps" --stderr "--warmup-steps 2 leaves no timed step of --steps 2" -- "$MX" sweep --warmup-steps 2 "${S[@]}" --out "$T/never.h5"
[ -e "$T/never.h5" ] && fail "a refused sweep created its output file"
expect 2 "sweep --lr 0" --stderr "--lr 0" -- "$MX" sweep --lr 0 --dataset synthetic --steps 5 --out "$T/never.h5"
expect 2 "sweep warmup longer than the run" --stderr "--warmup-steps 5" -- "$MX" sweep --steps 3 --warmup-steps 5 --dataset synthetic --out "$T/never.h5"
expect 2 "sweep --force --resume contradict" --stderr "--force" --stderr "--resume" -- "$MX" sweep --force --resume --dataset synthetic --steps 5 --out "$T/never.h5"
[ -e "$T/never.h5" ] && fail "a sweep rejected for bad usage created its output file"
expect 2 "report --format xml" --stderr "'xml'" -- "$MX" report x.h5 --format xml
expect 2 "report without a file" --stderr "missing argument" -- "$MX" report
expect 2 "compare with one file" --stderr "missing argument" -- "$MX" compare a.h5
expect 2 "compare bad --metrics" --stderr "'latency'" -- "$MX" compare a.h5 b.h5 --metrics latency
expect 2 "info takes no argument" --stderr "'extra'" -- "$MX" info extra

# ---- values out of range: exit 2 before any work, naming the value
expect 2 "train --steps -1 is bad usage" --stderr "-1" -- "$MX" train --steps -1 --dataset synthetic --workload mlp --quiet
expect 2 "train --epochs -3 --steps 5 is bad usage" -- "$MX" train --epochs -3 --steps 5 --dataset synthetic --workload mlp --quiet
expect 2 "train --warmup-steps beyond --steps is bad usage" --stderr "warmup-steps 10" -- "$MX" train --steps 3 --warmup-steps 10 --dataset synthetic --workload mlp --batch 16 --threads-per-device 1 --quiet
expect 2 "train --warmup-steps -2 is bad usage" -- "$MX" train --steps 3 --warmup-steps -2 --dataset synthetic --workload mlp --batch 16 --threads-per-device 1 --quiet
expect 2 "sweep --timeout -1 is bad usage" --stderr "timeout" -- "$MX" sweep --timeout -1 --dataset synthetic --steps 6 --dry-run
expect 2 "train --record into a missing directory is bad input" --stderr "no/such/dir" -- \
    "$MX" train --dataset synthetic --workload mlp --steps 2 --batch 16 --threads-per-device 1 --quiet --record "$T/no/such/dir/x.h5"
expect 2 "sweep --data /nonexistent is bad input" --stderr "/nonexistent" -- \
    "$MX" sweep --data /nonexistent --gpus 1 --steps 6 --out "$T/nodata.h5"

# ---- bad input files: exit 2, stderr names the file
expect 0 "a small results file to compare against" -- \
    "$MX" train --dataset synthetic --workload mlp --steps 2 --batch 16 --threads-per-device 1 --quiet --record "$T/good.h5"
head -c 4096 /dev/urandom >"$T/garbage.h5"
cp "$T/garbage.h5" "$T/garbage.copy"
: >"$T/empty.h5"
head -c $(($(stat -c %s "$T/good.h5") / 2)) "$T/good.h5" >"$T/truncated.h5"
mkdir "$T/adir"
bad_files=(missing.h5 garbage.h5 empty.h5 truncated.h5 adir)
# A foreign HDF5 file: valid HDF5 without the schema_version attribute.
have_foreign=0
if command -v h5import >/dev/null 2>&1; then
    printf '1 2 3 4\n' >"$T/foreign.txt"
    printf 'PATH /data\nINPUT-CLASS TEXTFP\nRANK 1\nDIMENSION-SIZES 4\nOUTPUT-CLASS FP\nOUTPUT-SIZE 64\n' >"$T/foreign.cfg"
    if h5import "$T/foreign.txt" -c "$T/foreign.cfg" -o "$T/foreign.h5" >/dev/null 2>&1 && [ -s "$T/foreign.h5" ]; then
        have_foreign=1
        bad_files+=(foreign.h5)
    fi
fi
[ $have_foreign = 1 ] || echo "note: h5import missing or failed; the foreign-HDF5 cases are not run"

for f in "${bad_files[@]}"; do
    expect 2 "report $f" --stderr "$T/$f" -- "$MX" report "$T/$f"
    expect 2 "report $f --format json" --stderr "$T/$f" -- "$MX" report "$T/$f" --format json
    [ -s "$T/out" ] && fail "report $f --format json printed to stdout although the file is bad: $(head -c 100 "$T/out")"
    expect 2 "plot $f" --stderr "$T/$f" -- "$MX" plot "$T/$f" --out "$T/plots"
    expect 2 "compare $f as base" --stderr "$T/$f" -- "$MX" compare "$T/$f" "$T/good.h5"
    expect 2 "compare $f as new" --stderr "$T/$f" -- "$MX" compare "$T/good.h5" "$T/$f"
done
expect 2 "report on a file that is not HDF5 says so" --stderr "not an HDF5 file" -- "$MX" report "$T/garbage.h5"
if [ $have_foreign = 1 ]; then
    expect 2 "report on a foreign HDF5 file says what is missing" --stderr "schema_version" -- "$MX" report "$T/foreign.h5"
fi
expect 2 "sweep --resume on a file that is not a results file" --stderr "$T/garbage.h5" -- \
    "$MX" sweep --resume --dataset synthetic --workload mlp --steps 6 --out "$T/garbage.h5"
cmp -s "$T/garbage.h5" "$T/garbage.copy" || fail "sweep --resume changed the file it refused to resume"

expect 2 "sweep --out in a directory that cannot be created" --stderr "/proc/no/such/x.h5" -- \
    "$MX" sweep --workload mlp --dataset synthetic --gpus 1 --steps 6 --out /proc/no/such/x.h5

# ---- datasets
expect 2 "train --data /nonexistent" --stderr "/nonexistent" -- "$MX" train --data /nonexistent --steps 1
mkdir "$T/baddata"
head -c 100 /dev/urandom >"$T/baddata/train-images-idx3-ubyte"
expect 2 "train --data on a malformed IDX file" --stderr "$T/baddata/train-images-idx3-ubyte" -- \
    "$MX" train --data "$T/baddata" --steps 1

# ---- info
expect 0 "mxbench info" --stdout "BLAS" --stdout "HDF5" --stdout "conv2d     direct for one-channel" -- "$MX" info
MXBENCH_CONV=gemm expect 0 "mxbench info under MXBENCH_CONV=gemm" --stdout "im2col + GEMM for every shape" -- "$MX" info
MXBENCH_GEMM=blas expect 0 "mxbench info under MXBENCH_GEMM=blas" --stdout "f32: the BLAS's sgemm" -- "$MX" info
MXBENCH_BF16=emulate expect 0 "mxbench info under MXBENCH_BF16=emulate" --stdout "--amp bf16: emulated" -- "$MX" info
if [ $rc -eq 0 ] && ! grep -Eq "HDF5 +[0-9]+\.[0-9]+" "$T/out"; then
    fail "mxbench info: expected an HDF5 version number on the HDF5 line, saw: $(grep HDF5 "$T/out")"
fi
# the line under the CPU: the instruction sets that choose kernels, as /proc/cpuinfo lists them,
# and the caches as sysfs gives them
feat=$("$MX" info | sed -n '/^  cpu /{n;p;}' | sed 's/^ *//')
want=""
for w in avx2 fma avx512f avx512_bf16 avx512_fp16 amx_tile amx_bf16 avx512_vnni; do
    grep -m1 '^flags' /proc/cpuinfo | grep -qw -- "$w" && want="$want${want:+ }$w"
done
[ "${feat%%;*}" = "${want:-none}" ] && pass "info: the CPU's instruction sets (${want:-none})" ||
    fail "info: instruction sets '${feat%%;*}', /proc/cpuinfo has '$want'"
l2=/sys/devices/system/cpu/cpu0/cache/index2
if [ -r $l2/size ] && [ "$(cat $l2/level)" = 2 ]; then
    case $feat in *"L2 $(cat $l2/size)"*) pass "info: L2 $(cat $l2/size)" ;; *) fail "info: no 'L2 $(cat $l2/size)' in '$feat'" ;; esac
fi

# ---- devices: --device, its default from MXBENCH_DEVICE (what sweep --device sets), the
# CUDA-only options; without a GPU (CI) cuda is refused before anything runs
MXBENCH_DEVICE=gpu expect 2 "MXBENCH_DEVICE=gpu" --stderr "MXBENCH_DEVICE 'gpu'" --stderr "cpu, cuda or auto" -- \
    "$MX" train --dataset synthetic --steps 1
expect 2 "sweep --device tpu" --stderr "'tpu'" --stderr "cpu|cuda|auto" -- "$MX" sweep --device tpu --dry-run
expect 0 "sweep --device cpu" --stderr "devices are CPU workers" -- \
    "$MX" sweep --device cpu --workload mlp --dataset synthetic --gpus 1 --steps 20 --out "$T/cpu.h5"
rec=$(h5dump -a /cpu_features "$T/cpu.h5" 2>/dev/null | sed -n 's/^ *(0): *"\(.*\)"$/\1/p' | head -1)
[ -n "$feat" ] && [ "$rec" = "$feat" ] && pass "the record's cpu_features is info's: $rec" ||
    fail "the record's cpu_features '$rec', info's '$feat'"
expect 2 "train --tf32 on CPU workers" --stderr "--tf32 applies to CUDA devices" -- \
    "$MX" train --device cpu --tf32 --dataset synthetic --steps 1
# a CUDA build on a machine without a GPU (CI), or a build without CUDA: each says which
if "$MX" info | grep -q '^  cuda *none (CUDA not built)'; then
    expect 2 "train --device cuda in a build without CUDA" --stderr "the CUDA backend is not in this build" -- \
        "$MX" train --device cuda --dataset synthetic --steps 1
elif "$MX" info | grep -q '^  cuda *none'; then
    expect 2 "train --device cuda without a GPU" --stderr "no CUDA device present" -- \
        "$MX" train --device cuda --dataset synthetic --steps 1
fi
if "$MX" info | grep -q '^  cuda *none'; then
    expect 2 "sweep --device cuda without a GPU: refused before any run" --stderr "nothing was run" -- \
        "$MX" sweep --device cuda --workload mlp --dataset synthetic --gpus 1 --steps 20 --out "$T/cuda.h5"
fi

echo "test_cli: $npass passed, $nfail failed"
[ $nfail -eq 0 ]

