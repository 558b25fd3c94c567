#!/usr/bin/env bash
# A full disk must never cost a recorded run: a sweep's results file lives on a small tmpfs;
# after a first sweep recorded 2 runs, the file system is filled up to a few KiB more than the
# file's size (room to copy it, none to grow it) and a `sweep --resume` with one more
# configuration runs. It must exit 1 (not crash) naming the file and "No space left on
# device", and the file must stay byte for byte the last good one: `mxbench report` and
# h5dump read it, with exactly the 2 runs, and no working copy is left beside it. Once space
# is freed, --resume completes the study. Then `train --record` on a disk with room for an
# empty record but not for its run: exit 1, and no 0-run file left (which the next run would
# refuse as existing). Needs root (mount); skipped (77) where mounting a tmpfs is not permitted.
# usage: test_full_disk.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u

MX=${1:?usage: test_full_disk.sh MXBENCH SOURCE_DIR BUILD_DIR}
case $MX in /*) ;; *) MX=$PWD/$MX ;; esac
[ -x "$MX" ] || { echo "test_full_disk: mxbench binary '$MX' is missing or not executable"; exit 1; }
command -v h5dump >/dev/null 2>&1 || { echo "test_full_disk: h5dump not found (apt-get install hdf5-tools)"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/mxbench-test_full_disk.XXXXXX") || exit 1
M=$T/mnt
mounted=0
cleanup() {
    [ $mounted = 1 ] && { umount "$M" 2>/dev/null || umount -l "$M" 2>/dev/null; }
    rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$M"
if ! mount -t tmpfs -o size=4m mxbench-full-disk "$M" 2>"$T/mount.err"; then
    echo "test_full_disk: skipped: cannot mount a tmpfs here (needs root and mount permission): $(cat "$T/mount.err")"
    exit 77
fi
mounted=1

npass=0 nfail=0
pass() { npass=$((npass + 1)); echo "ok: $*"; }
fail() { nfail=$((nfail + 1)); echo "FAIL: $*"; }
indent() { sed -e 's/^/    | /' "$@"; }
F=$M/study.h5
STUDY=(--workload mlp --dataset synthetic --steps 6 --warmup-steps 1 --batch 16 --threads-per-device 1 --out "$F")
# runs FILE: how many runs `mxbench report --format csv` lists (-1 when it cannot read FILE).
runs() {
    "$MX" report "$1" --format csv >"$T/r.csv" 2>"$T/r.err" || { echo -1; return; }
    echo $(($(wc -l <"$T/r.csv") - 1))
}

# ---- 1. the good state: 2 runs
"$MX" sweep "${STUDY[@]}" --gpus 1,2 >"$T/s1.out" 2>"$T/s1.err"
rc=$?
[ $rc -eq 0 ] && [ "$(runs "$F")" = 2 ] && pass "first sweep: 2 runs recorded on the tmpfs" ||
    { fail "first sweep: expected exit 0 and 2 runs, saw exit $rc, $(runs "$F") runs"; indent "$T/s1.err"; }
cp "$F" "$T/good.h5"

# ---- 2. fill the file system: room for a copy of the file and 4 KiB, no more
size=$(stat -c %s "$F")
avail=$(($(stat -f -c '%a * %S' "$M")))
fill=$(((avail - size - 4096) / 4096 * 4096))
if [ $fill -gt 0 ]; then
    head -c "$fill" /dev/zero >"$M/fill" 2>/dev/null
fi
left=$(($(stat -f -c '%a * %S' "$M")))
echo "results file $size bytes; filled $fill bytes, $left bytes left"

"$MX" sweep "${STUDY[@]}" --gpus 1,2,4 --resume >"$T/s2.out" 2>"$T/s2.err"
rc=$?
echo "sweep --resume on the full disk: exit $rc"
indent "$T/s2.err" | tail -6
[ $rc -lt 128 ] && pass "no crash: exit $rc is no signal" || fail "sweep --resume on a full disk was killed by signal $((rc - 128))"
[ $rc -eq 1 ] && pass "sweep exits 1 when it cannot record a run" || fail "sweep --resume on a full disk: expected exit 1, saw $rc"
grep -q "cannot record run .*$F.*No space left on device" "$T/s2.err" &&
    pass "the message names the file and 'No space left on device'" ||
    fail "expected 'cannot record run ... $F ... No space left on device' on stderr"
cmp -s "$F" "$T/good.h5" && pass "the file is byte for byte the last good one" ||
    fail "the file changed although the run could not be recorded"
n=$(runs "$F")
[ "$n" = 2 ] && pass "mxbench report reads it: exactly the 2 runs recorded before the disk filled" ||
    { fail "mxbench report: expected 2 runs, saw $n"; indent "$T/r.err"; }
h5dump -H "$F" >/dev/null 2>"$T/h5.err" && pass "h5dump reads it" || { fail "h5dump cannot read $F"; indent "$T/h5.err"; }
left_over=$(ls "$M" | grep -c '\.tmp-\|\.run-')
[ "$left_over" = 0 ] && pass "no working copy or run record left on the full disk" ||
    fail "left on the disk: $(ls "$M" | grep '\.tmp-\|\.run-' | tr '\n' ' ')"

# a second attempt on the still-full disk fails the same way: nothing was left half-done
"$MX" sweep "${STUDY[@]}" --gpus 1,2,4 --resume >"$T/s3.out" 2>"$T/s3.err"
rc=$?
[ $rc -eq 1 ] && cmp -s "$F" "$T/good.h5" && pass "a second --resume on the full disk: exit 1, file unchanged" ||
    fail "second --resume on the full disk: exit $rc, file $(cmp -s "$F" "$T/good.h5" && echo unchanged || echo changed)"

# ---- 3. space again: --resume completes the study
rm -f "$M/fill"
"$MX" sweep "${STUDY[@]}" --gpus 1,2,4 --resume >"$T/s4.out" 2>"$T/s4.err"
rc=$?
n=$(runs "$F")
[ $rc -eq 0 ] && [ "$n" = 3 ] && pass "with space again, --resume adds the missing run (3 runs)" ||
    { fail "--resume after freeing space: expected exit 0 and 3 runs, saw exit $rc, $n runs"; indent "$T/s4.err"; }

# ---- 4. train --record on a full disk: room for the new file, none for its run. The file
# this run created holds no run and must not stay (the next run would refuse it as existing)
"$MX" train "${STUDY[@]:0:12}" --record "$T/one.h5" --quiet >/dev/null 2>&1 || fail "train --record off the tmpfs"
one=$(( ($(stat -c %s "$T/one.h5") + 4095) / 4096 * 4096 ))
R=$M/rec.h5
avail=$(($(stat -f -c '%a * %S' "$M")))
fill=$((avail - one - 4096)) # the run's file and its lock file fit, not the empty file beside the run's
[ $fill -gt 0 ] && head -c "$fill" /dev/zero >"$M/fill" 2>/dev/null
echo "a record with its run takes $one bytes; $(($(stat -f -c '%a * %S' "$M"))) bytes left"
for attempt in first second; do
    "$MX" train "${STUDY[@]:0:12}" --record "$R" --quiet >"$T/t.out" 2>"$T/t.err"
    rc=$?
    [ $rc -eq 1 ] && grep -q "No space left on device" "$T/t.err" &&
        pass "$attempt train --record on the full disk: exit 1, 'No space left on device'" ||
        { fail "$attempt train --record on the full disk: expected exit 1 and 'No space left on device', saw exit $rc"; indent "$T/t.err" | tail -4; }
    [ ! -e "$R" ] && pass "$attempt attempt: no empty record left behind" ||
        fail "$attempt attempt: $R left behind ($(runs "$R") runs)"
done
left_over=$(ls "$M" | grep -c '^rec\.h5\.')
[ "$left_over" = 0 ] && pass "no working copy or lock file of the record left" ||
    fail "left on the disk: $(ls "$M" | grep '^rec\.h5\.' | tr '\n' ' ')"
rm -f "$M/fill"
"$MX" train "${STUDY[@]:0:12}" --record "$R" --quiet >"$T/t.out" 2>"$T/t.err"
rc=$?
[ $rc -eq 0 ] && [ "$(runs "$R")" = 1 ] && pass "with space again, train --record writes its run" ||
    { fail "train --record after freeing space: exit $rc, $(runs "$R") runs"; indent "$T/t.err" | tail -4; }

echo "test_full_disk: $npass passed, $nfail failed"
[ $nfail -eq 0 ]
