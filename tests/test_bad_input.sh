#!/usr/bin/env bash
# Bad input that must never cost a file, hang, or run silently wrong (exit 2 with a message
# naming the bad value, every file written before intact):
#  1. a results path that a fixed buffer would cut (a 1099-character --out with --resume,
#     one too long for the names of its working files);
#  2. a sweep whose axes multiply to more rows than a sweep plans (refused before planning);
#  3. `ab` with a NEW that exits 0 without writing its record (never scored with BASE's);
#  4. outputs that are not regular files (a FIFO, a character device as root) with --force,
#     and readers given a FIFO (refused, not blocked);
#  5. a data set whose IDX file is a FIFO (refused, not blocked);
#  6. two writers of one results file at once (the second refused, naming the first);
#  7. a batch larger than the training set (refused, sizes said);
#  8. a run of one timed step (its 95% CI said to be n/a, not "nan-nan");
#  9. an empty --record path.
# Every command runs under `timeout`: a hang is a failure (exit 124), not a stuck test.
# usage: test_bad_input.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u
. "$(dirname "$0")/e2e-lib.sh" test_bad_input "${1:?usage: test_bad_input.sh MXBENCH SOURCE_DIR BUILD_DIR}"
command -v python3 >/dev/null 2>&1 || { echo "test_bad_input: skipped, python3 is needed to write IDX files"; exit 77; }

S=(--workload mlp --dataset synthetic --steps 3 --warmup-steps 1 --batch 16 --threads-per-device 1)
TRAIN=(train "${S[@]}" --quiet)
# within WANT DESC SECONDS ARGS...: mx_expect under a time limit (a hang shows as exit 124)
within() {
    local stem=$1 want=$2 desc=$3 secs=$4
    shift 4
    timeout -k 5 "$secs" "$MX" "$@" >"$T/$stem.out" 2>"$T/$stem.err"
    rc=$?
    if [ $rc -eq "$want" ]; then
        pass "$desc: exit $rc"
        return 0
    fi
    fail "$desc (mxbench $*): expected exit $want, saw $rc$([ $rc -eq 124 ] && echo ' (timed out: it hung)')"
    indent "$T/$stem.out" "$T/$stem.err" | cut -c1-400 | head -20
    return 1
}
# has STEM TEXT DESC: stderr of STEM contains TEXT
has() { grep -qF -- "$2" "$T/$1.err" && pass "$3" || { fail "$3: expected '$2' on stderr"; indent "$T/$1.err" | head -10; }; }
runs() { "$MX" report "$1" --format csv 2>/dev/null | tail -n +2 | wc -l; }

# ---- 1. long paths: a name cut to fit a buffer must never become the results file's own
# a directory chain in $T, then a file name making the absolute path exactly 1099 characters
D=$T
while [ ${#D} -lt 900 ]; do D=$D/$(printf 'd%.0s' $(seq 200)); done
mkdir -p "$D"
OUT=$D/$(printf 'o%.0s' $(seq $((1099 - ${#D} - 1 - 3)))).h5
[ ${#OUT} -eq 1099 ] || fail "setup: the long path has ${#OUT} characters, not 1099"
within long1 0 "sweep --out of 1099 characters" 300 sweep "${S[@]}" --gpus 1 --out "$OUT"
within long2 0 "sweep --resume of that file adds a run" 300 sweep "${S[@]}" --gpus 1,2 --out "$OUT" --resume
[ -f "$OUT" ] && [ "$(runs "$OUT")" = 2 ] && pass "the 1099-character results file is kept, with both runs" ||
    fail "the 1099-character results file: $([ -f "$OUT" ] && echo "$(runs "$OUT") runs" || echo deleted)"
# a path whose working files' names the system cannot take: refused before anything is written
while [ ${#D} -lt 3900 ]; do D=$D/$(printf 'e%.0s' $(seq 250)); done
mkdir -p "$D"
LONG=$D/$(printf 'p%.0s' $(seq $((4085 - ${#D})))).h5
within long3 2 "sweep --out of ${#LONG} characters (its .run-<pid>.h5 would not fit)" 60 sweep "${S[@]}" --gpus 1 --out "$LONG"
has long3 "accepted: at most" "the refusal says the longest path accepted"
[ ! -e "$LONG" ] && pass "nothing written at the refused path" || fail "a file was written at the refused path"

# ---- 2. a plan beyond the bound: refused at once, naming the rows and the bound
L=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16
within huge 2 "sweep with 16 x 16 x 16 x 16 rows" 30 sweep --gpus $L --lr $L --batch $L --micro-batches $L --dry-run
has huge "65536 rows" "the refusal names the number of rows"
has huge "at most 10000 rows" "the refusal names the bound"
T10=1,2,3,4,5,6,7,8,9,10
within overbound 2 "sweep of 11 x 10 x 10 x 10 rows" 30 sweep --gpus $T10,11 --lr $T10 --batch $T10 --micro-batches $T10 --dry-run
has overbound "11000 rows" "the refusal names 11000 rows"
within atbound 0 "sweep --dry-run of 10 x 10 x 10 x 10 rows (the bound) is planned" 300 sweep --workload mlp \
    --dataset synthetic --gpus $T10 --lr $T10 --batch $T10 --micro-batches $T10 --dry-run
[ "$(grep -c '^ *[0-9]*  ' "$T/atbound.out")" -ge 1000 ] && pass "the plan is printed (1000 distinct rows)" ||
    fail "the 10000-row plan: $(grep -c '^ *[0-9]*  ' "$T/atbound.out") rows printed, expected 1000"

# ---- 3. ab: a NEW that writes no record is refused, never scored with BASE's record
AB=(--rounds 2 --warmup-rounds 0 --quiet -- --workload mlp --dataset synthetic --steps 3 --warmup-steps 1 --batch 16
    --threads-per-device 1)
within abtrue 2 "ab BASE /bin/true" 300 ab "$MX" /bin/true "${AB[@]}"
has abtrue "/bin/true" "ab's refusal names the binary"
has abtrue "round 1/2" "ab's refusal names the round"
has abtrue "wrote no record" "ab's refusal says no record was written"
grep -q "verdict\|same\|regression\|improvement" "$T/abtrue.out" && fail "ab printed a verdict: $(cat "$T/abtrue.out")" ||
    pass "ab printed no verdict"
# a NEW that writes its record in the first round only: the second round is refused
cat >"$T/once.sh" <<EOF
#!/bin/sh
[ -e "$T/once.done" ] && exit 0
touch "$T/once.done"
exec "$MX" "\$@"
EOF
chmod +x "$T/once.sh"
within abonce 2 "ab BASE NEW, NEW writing no record in round 2" 300 ab "$MX" "$T/once.sh" "${AB[@]}"
has abonce "round 2/2" "ab names round 2"

# ---- 4. outputs that are not regular files; readers given a FIFO
mkfifo "$T/fifo"
within recfifo 2 "train --record FIFO --force" 60 "${TRAIN[@]}" --record "$T/fifo" --force
has recfifo "not a regular file" "the refusal says: not a regular file"
has recfifo "$T/fifo" "the refusal names the path"
[ -p "$T/fifo" ] && pass "the FIFO is still a FIFO" || fail "the FIFO was replaced"
within outfifo 2 "sweep --out FIFO --force" 60 sweep "${S[@]}" --gpus 1 --out "$T/fifo" --force
has outfifo "not a regular file" "sweep's refusal says: not a regular file"
within resfifo 2 "sweep --out FIFO --resume" 60 sweep "${S[@]}" --gpus 1 --out "$T/fifo" --resume
[ -p "$T/fifo" ] && pass "the FIFO is still a FIFO after sweep" || fail "sweep replaced the FIFO"
for c in report plot project; do
    within "read$c" 2 "$c on a FIFO" 30 $c "$T/fifo"
    has "read$c" "not a regular file" "$c says: not a regular file"
done
"$MX" "${TRAIN[@]}" --record "$T/good.h5" >/dev/null 2>&1 || fail "setup: train --record good.h5"
within readcompare 2 "compare GOOD FIFO" 30 compare "$T/good.h5" "$T/fifo"
if [ "$(id -u)" = 0 ] && mknod "$T/full" c 1 7 2>/dev/null; then # a second node of /dev/full
    within recdev 2 "train --record CHARDEV --force (root)" 60 "${TRAIN[@]}" --record "$T/full" --force
    has recdev "character device" "the refusal names the kind of file"
    within outdev 2 "sweep --out CHARDEV --force (root)" 60 sweep "${S[@]}" --gpus 1 --out "$T/full" --force
    [ -c "$T/full" ] && pass "the device node is still a character device" || fail "the device node was replaced"
else
    echo "skipped: the character-device cases (need root and mknod)"
fi

# ---- 5. an IDX file that is a FIFO
python3 - "$T/small" <<'EOF'
import os, struct, sys
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
def write(name, n, image):
    with open(os.path.join(d, name), "wb") as f:
        if image:
            f.write(struct.pack(">IIII", 0x803, n, 28, 28) + bytes((i * 7) % 256 for i in range(n * 784)))
        else:
            f.write(struct.pack(">II", 0x801, n) + bytes(i % 10 for i in range(n)))
for split, n in (("train", 20), ("t10k", 10)):
    write(split + "-images-idx3-ubyte", n, True)
    write(split + "-labels-idx1-ubyte", n, False)
EOF
mkdir -p "$T/fifodata"
cp "$T"/small/* "$T/fifodata/"
rm "$T/fifodata/train-images-idx3-ubyte"
mkfifo "$T/fifodata/train-images-idx3-ubyte"
within datafifo 2 "train --data DIR with a FIFO for an IDX file" 60 train --workload mlp --data "$T/fifodata" --epochs 1 \
    --batch 4 --threads-per-device 1 --quiet
has datafifo "train-images-idx3-ubyte" "the refusal names the file"
has datafifo "not a regular file" "the refusal says: not a regular file"
within sweepfifo 2 "sweep --data DIR with a FIFO for an IDX file" 60 sweep --workload mlp --data "$T/fifodata" --epochs 1 \
    --batch 4 --gpus 1 --out "$T/fifodata.h5" --dry-run

# ---- 6. two writers of one results file at once
# a sweep long enough to be running while the second process starts
"$MX" sweep --workload mlp --dataset synthetic --steps 400 --warmup-steps 1 --batch 16 --threads-per-device 1 \
    --gpus 1,2,3 --out "$T/shared.h5" >"$T/first.out" 2>"$T/first.err" &
first=$!
for _ in $(seq 400); do [ -e "$T/shared.h5.lock" ] && [ -e "$T/shared.h5" ] && break; sleep 0.05; done
within second 2 "a second sweep --resume of a file another sweep writes" 30 sweep "${S[@]}" --gpus 4 --out "$T/shared.h5" --resume
has second "pid $first" "the refusal names the writing process"
has second "sweep" "the refusal names its command"
within secondtrain 2 "train --record --force on a file a sweep writes" 30 "${TRAIN[@]}" --record "$T/shared.h5" --force
kill -0 $first 2>/dev/null && pass "the first sweep was still running meanwhile" ||
    fail "the first sweep ended before the second writer started (the test proved nothing)"
wait $first
rc=$?
[ $rc -eq 0 ] && [ "$(runs "$T/shared.h5")" = 3 ] && pass "the first sweep kept all its 3 runs" ||
    { fail "the first sweep: exit $rc, $(runs "$T/shared.h5") runs (expected 0 and 3)"; indent "$T/first.err" | tail -5; }
[ ! -e "$T/shared.h5.lock" ] && pass "the lock file is gone once the sweep ended" || fail "shared.h5.lock left behind"
# train --record held by a long train
"$MX" train --workload mlp --dataset synthetic --steps 1500 --batch 16 --threads-per-device 1 --quiet \
    --record "$T/rec.h5" >/dev/null 2>"$T/trainA.err" &
first=$!
for _ in $(seq 400); do [ -e "$T/rec.h5.lock" ] && break; sleep 0.05; done
within trainB 2 "a second train --record --force of a file a train writes" 30 "${TRAIN[@]}" --record "$T/rec.h5" --force
has trainB "pid $first" "the refusal names the writing train"
kill -0 $first 2>/dev/null && pass "the first train was still running meanwhile" ||
    fail "the first train ended before the second started (the test proved nothing)"
wait $first && [ "$(runs "$T/rec.h5")" = 1 ] && pass "the first train recorded its run" ||
    { fail "the first train's record"; indent "$T/trainA.err" | tail -5; }

# ---- 7. a batch larger than the training set
within bigbatch 2 "train --batch 32 on a data set of 20 training samples" 60 train --workload mlp --data "$T/small" \
    --epochs 1 --batch 32 --threads-per-device 1 --quiet
has bigbatch "32" "the refusal says the batch"
has bigbatch "20 training samples" "the refusal says the training set's size"
within fitbatch 0 "train --batch 20 on those 20 samples" 60 train --workload mlp --data "$T/small" --epochs 1 --batch 20 \
    --threads-per-device 1 --quiet
within synthbig 0 "synthetic data with a batch above its 4096 samples trains full batches" 120 train --workload mlp \
    --dataset synthetic --steps 2 --warmup-steps 1 --batch 5000 --threads-per-device 1

# ---- 8. one timed step: no interval
within onestep 0 "train of one timed step" 60 train --workload mlp --dataset synthetic --steps 1 --warmup-steps 0 \
    --batch 16 --threads-per-device 1
grep -qF "95% CI n/a (1 timed step)" "$T/onestep.out" && pass "the summary says: 95% CI n/a (1 timed step)" ||
    { fail "expected '95% CI n/a (1 timed step)' in the summary"; indent "$T/onestep.out"; }
grep -q "nan" "$T/onestep.out" && fail "the summary prints nan: $(cat "$T/onestep.out")" || pass "no nan in the summary"

# ---- 9. an empty --record
within emptyrec 2 "train --record ''" 60 "${TRAIN[@]}" --record ""
has emptyrec "--record: the path is empty" "the refusal says the path is empty"
within emptyout 2 "sweep --out ''" 60 sweep "${S[@]}" --gpus 1 --out ""

echo "test_bad_input: $npass passed, $nfail failed"
[ $nfail -eq 0 ]
