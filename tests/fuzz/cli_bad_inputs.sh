#!/usr/bin/env bash
# Bad-input classes for the mxbench CLI that tests/test_cli.sh does not try, run by
# scripts/sanitize.sh against the ASan/UBSan binary: numbers at and past the edges of their
# types, huge counts, malformed lists, and files for report/compare/plot that are not what
# they claim (including a valid results file corrupted byte by byte). Each must be refused
# with exit 2 (bad usage or bad input), never a crash, a hang or a sanitizer report.
# usage: cli_bad_inputs.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u
MX=${1:?usage: cli_bad_inputs.sh MXBENCH SOURCE_DIR BUILD_DIR}
case $MX in /*) ;; *) MX=$PWD/$MX ;; esac
[ -x "$MX" ] || { echo "cli_bad_inputs: '$MX' is not executable"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/mxbench-cli_bad.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

npass=0 nfail=0
# bad DESC CMD...: must exit 2 within 120 s
bad() {
    local desc=$1 rc=0
    shift
    timeout 120 "$@" >"$T/out" 2>"$T/err" || rc=$?
    if [ $rc -eq 2 ]; then
        npass=$((npass + 1))
    else
        nfail=$((nfail + 1))
        echo "FAIL: $desc: expected exit 2, saw $rc ($([ $rc -eq 124 ] && echo timeout)$([ $rc -eq 86 ] && echo 'sanitizer report')$([ $rc -gt 128 ] && echo "signal $((rc - 128))")): $*"
        sed -e 's/^/    stderr: /' "$T/err" | head -8
    fi
}

S=(--dataset synthetic --workload mlp --steps 2 --batch 16 --threads-per-device 1 --quiet)

# ---- numbers: type edges, overflow, non-finite, odd syntax
for v in 2147483648 -2147483649 99999999999999999999 0x10 1e3 "1 " "" +-1 --1; do
    bad "train --epochs '$v'" "$MX" train --epochs "$v" --dataset synthetic
done
for v in nan inf -inf 1e999 -1e999 0x 1e 0.1.2 " " abc; do
    bad "train --lr '$v'" "$MX" train --lr "$v" "${S[@]}"
    bad "train --momentum '$v'" "$MX" train --momentum "$v" "${S[@]}"
done

# ---- huge counts: each must be refused at parsing, naming the value
bad "train --batch INT_MAX" "$MX" train --batch 2147483647 "${S[@]:0:6}" --threads-per-device 1
bad "train --repeat 2e9" "$MX" train --repeat 2000000000 "${S[@]}"
bad "train --epochs INT_MAX" "$MX" train --epochs 2147483647 --dataset synthetic --workload mlp --quiet
bad "train --steps INT_MAX" "$MX" train --steps 2147483647 --dataset synthetic --workload mlp --quiet --batch 16
bad "train --threads-per-device 100000" "$MX" train --threads-per-device 100000 --dataset synthetic --workload mlp --steps 1
bad "train --warmup-steps INT_MAX" "$MX" train --warmup-steps 2147483647 "${S[@]}"
bad "train --gpus INT_MAX" "$MX" train --gpus 2147483647 "${S[@]}"
bad "sweep --batch INT_MAX" "$MX" sweep --batch 2147483647 --dataset synthetic --steps 6 --dry-run
bad "sweep --repeat 2e9" "$MX" sweep --repeat 2000000000 --dataset synthetic --steps 6 --dry-run
bad "sweep --timeout huge" "$MX" sweep --timeout 1e300 --dataset synthetic --steps 6 --dry-run

# ---- lists
long=$(seq -s, 1 5000)
for v in "," ",1" "1,," "1,,2" "1,2," "$long" "1;2" "1 2" "-1,2"; do
    bad "sweep --gpus '${v:0:20}'" "$MX" sweep --gpus "$v" --dataset synthetic --steps 6 --dry-run
done
for v in "," "0.1," "0.1,,0.2" "nan" "1e999,0.1"; do
    bad "sweep --lr '$v'" "$MX" sweep --lr "$v" --dataset synthetic --steps 6 --dry-run
done
for v in "," "data," ",data" "data,,data" "$(printf 'data,%.0s' $(seq 1 3000))data"; do
    bad "sweep --strategies '${v:0:20}'" "$MX" sweep --strategies "$v" --dataset synthetic --steps 6 --dry-run
done
for v in "3,1," "2147483647,2147483647" "0,0" "-1,2" "1e9,1"; do
    bad "train --work-load '$v'" "$MX" train --gpus 2 --work-load "$v" "${S[@]}"
done
for v in "" "5" "5%%" "100%" "-5%" "nan%" "1e999"; do
    bad "compare --threshold '$v'" "$MX" compare a.h5 b.h5 --threshold "$v"
done
bad "compare --metrics ','" "$MX" compare a.h5 b.h5 --metrics ,
bad "compare --metrics 'throughput,'" "$MX" compare a.h5 b.h5 --metrics throughput,

# ---- files for report / compare / plot
"$MX" train "${S[@]}" --record "$T/good.h5" >/dev/null 2>&1 || { echo "FAIL: cannot make a results file"; exit 1; }
mkfifo "$T/fifo"
ln -s "$T/nowhere.h5" "$T/dangling.h5"
printf '\211HDF\r\n\032\n' >"$T/magic_only.h5"
bad_files=(/dev/null fifo dangling.h5 magic_only.h5 "$T")
# Corruption of a valid file: one byte flipped at spread-out offsets, and cuts. This also
# puts libhdf5's own parsing under test; a crash inside it is reported like ours.
size=$(stat -c %s "$T/good.h5")
for i in 1 2 3 4 5 6 7 8; do
    off=$((size * i / 9))
    cp "$T/good.h5" "$T/flip$i.h5"
    printf "\\x$(printf %02x $(((i * 37 + 1) % 256)))" | dd of="$T/flip$i.h5" bs=1 seek=$off conv=notrunc status=none
    head -c $((size * i / 9)) "$T/good.h5" >"$T/cut$i.h5"
    bad_files+=("cut$i.h5")
done
for f in "${bad_files[@]}"; do
    bad "report $f" "$MX" report "$f"
    bad "compare $f" "$MX" compare "$T/good.h5" "$f"
    bad "plot $f" "$MX" plot "$f" --out "$T/plots"
done
# A flipped byte may land where HDF5 never looks (free space, padding): then the file is
# still good. Only a crash, a hang or a sanitizer report is a failure there.
for i in 1 2 3 4 5 6 7 8; do
    rc=0
    timeout 120 "$MX" report "$T/flip$i.h5" >/dev/null 2>"$T/err" || rc=$?
    if [ $rc -eq 0 ] || [ $rc -eq 2 ]; then npass=$((npass + 1)); else
        nfail=$((nfail + 1))
        echo "FAIL: report flip$i.h5 (byte at $((size * i / 9)) changed): exit $rc"
        sed -e 's/^/    stderr: /' "$T/err" | head -8
    fi
done

echo "cli_bad_inputs: $npass passed, $nfail failed"
[ $nfail -eq 0 ]
