#!/usr/bin/env bash
# The timeline (`train --trace`, engine/trace.h): a Chrome trace that a JSON reader loads (the
# format Perfetto imports: traceEvents of ph "X" with numeric ts and dur in microseconds,
# pid and tid, and ph "M" thread names), with every device's step phases and layers, its
# pushes and pulls, the kvstore workers' reductions, the trainer's steps (as many as
# --trace-steps asked), and communication overlapping backward (a reduction starting before
# the last backward of its step ends); a dist_allreduce job's trace too (worker 0's, when
# this build has MPI); a sweep's --trace DIR keeps one per row; an unwritable path fails the
# run naming it; --trace-steps 0 exits 2.
# usage: test_trace.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u
MX=${1:?usage: test_trace.sh MXBENCH SOURCE_DIR BUILD_DIR}
# shellcheck source=tests/e2e-lib.sh
. "${2:?usage: test_trace.sh MXBENCH SOURCE_DIR BUILD_DIR}/tests/e2e-lib.sh" test_trace "$MX"
command -v python3 >/dev/null 2>&1 || { echo "skip: python3 not found (it reads the JSON)"; exit 77; }

# check.py FILE STEPS DEVICES WORKERS: prints what it found, exits 1 on a format error
cat >"$T/check.py" <<'PY'
import json, sys
path, steps, devices, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
d = json.load(open(path))
ev = d["traceEvents"]
bad = [e for e in ev if e.get("ph") not in ("X", "M") or not isinstance(e.get("pid"), int) or not isinstance(e.get("tid"), int)]
x = [e for e in ev if e["ph"] == "X"]
bad += [e for e in x if not isinstance(e.get("ts"), (int, float)) or not isinstance(e.get("dur"), (int, float))
        or e["dur"] < 0 or not e.get("name") or not e.get("cat")]
names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
want = {"trainer"} | {"device %d" % i for i in range(devices)} | {"kvstore worker %d" % i for i in range(workers)}
cats = {e["cat"] for e in x}
steps_seen = [e for e in x if e["tid"] == 0 and e["name"].startswith("step ")]
# overlap: in some step, a kvstore reduction starts before the last device's backward ends
overlap = False
for s in steps_seen:
    t0, t1 = s["ts"], s["ts"] + s["dur"]
    bwd_end = max((e["ts"] + e["dur"] for e in x if e["name"] == "backward" and t0 <= e["ts"] <= t1), default=None)
    red = [e["ts"] for e in x if e["name"].startswith("reduce key") and t0 <= e["ts"] <= t1]
    if bwd_end is not None and red and min(red) < bwd_end:
        overlap = True
ok = not bad and want <= names and {"forward", "backward", "kvstore", "step"} <= cats and len(steps_seen) == steps
if workers == 0:
    ok = not bad and want <= names and {"forward", "backward", "step"} <= cats and len(steps_seen) == steps
print("events %d, malformed %d, tracks %s, categories %s, steps %d, comm overlapping backward: %s"
      % (len(x), len(bad), sorted(names), sorted(cats), len(steps_seen), overlap))
sys.exit(0 if ok and (workers == 0 or overlap) else 1)
PY

run local "$MX" train --workload lenet --dataset synthetic --steps 8 --warmup-steps 2 --gpus 2 --trace "$T/t.json" \
    --trace-steps 3 && {
    out=$(python3 "$T/check.py" "$T/t.json" 3 2 2) && pass "2 devices: $out" || fail "2 devices: $out"
}
if "$MX" info 2>/dev/null | grep -q dist_allreduce && command -v mpirun >/dev/null 2>&1; then
    run dist mpirun --oversubscribe --mca btl self,tcp -np 2 "$MX" train --workload mlp --dataset synthetic --steps 6 \
        --batch 32 --kvstore dist_allreduce --trace "$T/d.json" && {
        out=$(python3 "$T/check.py" "$T/d.json" 5 1 0) && pass "dist_allreduce, worker 0: $out" ||
            fail "dist_allreduce: $out"
    }
else
    echo "skip: the dist_allreduce trace (no MPI in this build)"
fi
run sweep "$MX" sweep --strategies data --gpus 1,2 --workload mlp --dataset synthetic --steps 10 --out "$T/s.h5" \
    --trace "$T/traces" && {
    out0=$(python3 "$T/check.py" "$T/traces/r0000.json" 5 1 0) && out1=$(python3 "$T/check.py" "$T/traces/r0001.json" 5 2 2) &&
        pass "sweep --trace: a timeline per row (r0000: $out0)" ||
        fail "sweep --trace: $(ls "$T/traces" 2>&1 | tr '\n' ' ') ${out0:-} ${out1:-}"
}
"$MX" train --workload mlp --dataset synthetic --steps 3 --trace "$T/no/such/dir/t.json" >"$T/u.out" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q "cannot write the trace" "$T/u.out" && pass "an unwritable trace path fails the run: exit $rc" ||
    fail "unwritable trace path: exit $rc: $(tail -2 "$T/u.out")"
"$MX" train --workload mlp --dataset synthetic --steps 3 --trace "$T/z.json" --trace-steps 0 >"$T/z.out" 2>&1
rc=$?
[ $rc -eq 2 ] && pass "--trace-steps 0: exit 2, $(head -1 "$T/z.out")" || fail "--trace-steps 0: exit $rc"

echo "test_trace: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
