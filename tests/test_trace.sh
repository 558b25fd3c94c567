#!/usr/bin/env bash
# The timeline (`train --trace`, engine/core/trace.h): a Chrome trace that a JSON reader loads (the
# format Perfetto imports: traceEvents of ph "X" with numeric ts and dur >= 0 in microseconds,
# pid and tid, args.bytes a number, ph "M" process and thread names for every track; events
# on a track nest or follow one another, as Perfetto needs), with every device's step phases
# and layers, its pushes and pulls, the kvstore workers' reductions and their communicator's
# calls (category comm), the trainer's steps (as many as --trace-steps asked), and
# communication overlapping backward (a reduction and a comm call starting before the last
# backward of their step ends). Where this build has MPI, a dist_* job's trace is one file
# with a process per rank: a dist_allreduce job (its all-reduces) and a dist_sync job with a
# server (its receives and replies, the workers' pushes and pulls), comm events on every
# rank, the workers' first steps within 0.5 s, and one clock: the k-th all-reduce of every
# rank overlaps the others', a server answers a key between a worker's push and the end of
# its pull (within 1 ms beyond the clock error the file states). A sweep's --trace DIR keeps
# one per row; an unwritable path fails the run naming it; --trace-steps 0 exits 2.
# usage: test_trace.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u
MX=${1:?usage: test_trace.sh MXBENCH SOURCE_DIR BUILD_DIR}
# shellcheck source=tests/e2e-lib.sh
. "${2:?usage: test_trace.sh MXBENCH SOURCE_DIR BUILD_DIR}/tests/e2e-lib.sh" test_trace "$MX"
command -v python3 >/dev/null 2>&1 || { echo "skip: python3 not found (it reads the JSON)"; exit 77; }

# check.py one FILE STEPS DEVICES WORKERS (a process's trace) or check.py job FILE STEPS RANKS
# SERVERS (a dist_* job's, merged): prints what it found, exits 1 on a format error or a
# missing piece
cat >"$T/check.py" <<'PY'
import collections, json, re, sys
mode, path, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = json.load(open(path))
ev = d["traceEvents"]
num = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
bad = [e for e in ev if e.get("ph") not in ("X", "M") or not isinstance(e.get("pid"), int) or not isinstance(e.get("tid"), int)]
x = [e for e in ev if e["ph"] == "X"]
bad += [e for e in x if not num(e.get("ts")) or not num(e.get("dur")) or e["ts"] < 0 or e["dur"] < 0
        or not e.get("name") or not e.get("cat") or ("args" in e and not (num(e["args"].get("bytes")) and e["args"]["bytes"] >= 0))]
comm = [e for e in x if e["cat"] == "comm"]
bad += [e for e in comm if "args" not in e]
meta = lambda kind: {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == kind}
threads, procs = meta("thread_name"), meta("process_name")
bad += [e for e in x if (e["pid"], e["tid"]) not in threads or (e["pid"], 0) not in procs]
ns = lambda t: round(t * 1000)  # whole nanoseconds: the file's resolution
# Perfetto drops a slice that overlaps the end of the one it starts in: on a track, events
# nest or follow one another
track = collections.defaultdict(list)
for e in x:
    track[(e["pid"], e["tid"])].append((ns(e["ts"]), ns(e["ts"] + e["dur"]), e["name"]))
crossed = []
for k, spans in track.items():
    stack = []
    for a, b, n in sorted(spans, key=lambda s: (s[0], -s[1])):
        while stack and stack[-1][1] <= a:
            stack.pop()
        if stack and b > stack[-1][1]:
            crossed.append("%s: %s over the end of %s" % (k, n, stack[-1][2]))
        stack.append((a, b, n))
steps_of = lambda pid: sorted((e for e in x if e["pid"] == pid and e["tid"] == 0 and e["name"].startswith("step ")),
                              key=lambda e: e["ts"])
cats = {e["cat"] for e in x}
say = "events %d, malformed %d, crossed %d %s, categories %s" % (len(x), len(bad), len(crossed), crossed[:2], sorted(cats))
ok = not bad and not crossed and {"forward", "backward", "step"} <= cats
if mode == "one":
    devices, workers = int(sys.argv[4]), int(sys.argv[5])
    names = set(threads.values())
    want = {"trainer"} | {"device %d" % i for i in range(devices)} | {"kvstore worker %d" % i for i in range(workers)}
    # overlap: in some step, a kvstore reduction and a comm call start before the last
    # device's backward ends
    overlap = False
    for s in steps_of(0):
        t0, t1 = s["ts"], s["ts"] + s["dur"]
        bwd_end = max((e["ts"] + e["dur"] for e in x if e["name"] == "backward" and t0 <= e["ts"] <= t1), default=None)
        red = [e["ts"] for e in x if e["name"].startswith("reduce key") and t0 <= e["ts"] <= t1]
        calls = [e["ts"] for e in comm if t0 <= e["ts"] <= t1]
        if bwd_end is not None and red and min(red) < bwd_end and calls and min(calls) < bwd_end:
            overlap = True
    # the kvstore's communicator: its calls on the kvstore workers' tracks
    kv_comm = sorted({e["name"] for e in comm if threads[(e["pid"], e["tid"])].startswith("kvstore worker")})
    ok = ok and want <= names and len(steps_of(0)) == steps
    if workers:
        ok = ok and "kvstore" in cats and overlap and kv_comm
    print("%s, tracks %s, steps %d, kvstore comm calls %s, comm overlapping backward: %s"
          % (say, sorted(names), len(steps_of(0)), kv_comm, overlap))
    sys.exit(0 if ok else 1)
# a job: a process per rank, named by rank and role
ranks, servers = int(sys.argv[4]), int(sys.argv[5])
pids = sorted({p for p, _ in procs})
roles = {p: re.match(r"rank %d \((worker|server) \d+ on " % p, procs[(p, 0)]) for p in pids}
workers = [p for p in pids if roles[p] and roles[p].group(1) == "worker"]
ok = ok and pids == list(range(ranks)) and all(roles.values()) and len(workers) == ranks - servers
ok = ok and {e["pid"] for e in comm} == set(pids) and all(len(steps_of(p)) == steps for p in workers)
# one clock: every worker's first step starts within 0.5 s of the others'
firsts = [steps_of(p)[0]["ts"] for p in workers if steps_of(p)]
spread = max(firsts) - min(firsts) if firsts else -1
ok = ok and 0 <= spread < 5e5
# and causality across ranks, which a clock off by more than a millisecond (beyond the error
# the file states for its clocks) breaks: the k-th all-reduce of each rank overlaps the k-th
# of every other (none completes before all entered); a server answers a key between a
# worker's push of it and the end of that worker's pull
late = []
stated = [re.search(r"clock within (\d+) us", procs[(p, 0)]) for p in pids]
tol = 1000 + 2 * max([float(m.group(1)) for m in stated if m] + [0])
if servers == 0:
    calls = {p: sorted((e for e in comm if e["pid"] == p and e["name"] == "allreduce"), key=lambda e: e["ts"]) for p in pids}
    n = min(len(c) for c in calls.values())
    for k in range(n):
        lo = max(calls[p][k]["ts"] for p in pids)
        hi = min(calls[p][k]["ts"] + calls[p][k]["dur"] for p in pids)
        if lo > hi + tol:
            late.append("all-reduce %d: the last entered at %.0f, the first left at %.0f" % (k, lo, hi))
    checked = n
else:
    replies = [e for e in comm if e["name"].startswith("reply key ")]
    checked = 0
    for p in workers:
        for pull in (e for e in comm if e["pid"] == p and e["name"].startswith("ps pull key ")):
            key = pull["name"].split()[-1]
            end = pull["ts"] + pull["dur"]
            push = [e["ts"] for e in comm if e["pid"] == p and e["name"] == "ps push key " + key and e["ts"] <= end]
            if not push:
                continue
            checked += 1
            if not any(max(push) - tol <= r["ts"] <= end + tol for r in replies if r["name"].split()[-1] == key):
                late.append("rank %d, key %s: no server reply between its push at %.0f and its pull's end at %.0f"
                            % (p, key, max(push), end))
ok = ok and checked > 0 and not late
print("%s, processes %s, comm on ranks %s, first steps within %.0f us, %d exchanges checked, %d out of order %s"
      % (say, [procs[(p, 0)] for p in pids], sorted({e["pid"] for e in comm}), spread, checked, len(late), late[:2]))
sys.exit(0 if ok else 1)
PY

# in buckets (--bucket-mb) of 10 KB: lenet's dense layers are exchanged while its convolutions'
# backward runs (in one bucket of all its keys, the exchange would wait for the whole backward)
run local "$MX" train --workload lenet --dataset synthetic --steps 8 --warmup-steps 2 --gpus 2 --bucket-mb 0.01 \
    --trace "$T/t.json" --trace-steps 3 && {
    out=$(python3 "$T/check.py" one "$T/t.json" 3 2 2) && pass "2 devices: $out" || fail "2 devices: $out"
}
if "$MX" info 2>/dev/null | grep -q dist_allreduce && command -v mpirun >/dev/null 2>&1; then
    MPI=(mpirun --oversubscribe --mca btl self,tcp)
    run dist "${MPI[@]}" -np 2 "$MX" train --workload mlp --dataset synthetic --steps 6 --warmup-steps 1 \
        --batch 32 --kvstore dist_allreduce --trace "$T/d.json" && {
        out=$(python3 "$T/check.py" job "$T/d.json" 5 2 0) && pass "dist_allreduce, 2 ranks in one file: $out" ||
            fail "dist_allreduce: $out"
    }
    run ps "${MPI[@]}" -np 3 "$MX" train --workload mlp --dataset synthetic --steps 7 --warmup-steps 1 --batch 32 \
        --kvstore dist_sync --servers 1 --trace "$T/p.json" --trace-steps 4 && {
        out=$(python3 "$T/check.py" job "$T/p.json" 4 3 1) && pass "dist_sync, 2 workers and a server: $out" ||
            fail "dist_sync: $out"
    }
else
    echo "skip: the dist_* traces (no MPI in this build)"
fi
run sweep "$MX" sweep --strategies data --gpus 1,2 --workload mlp --dataset synthetic --steps 10 --out "$T/s.h5" \
    --trace "$T/traces" && {
    out0=$(python3 "$T/check.py" one "$T/traces/r0000.json" 5 1 0) &&
        out1=$(python3 "$T/check.py" one "$T/traces/r0001.json" 5 2 2) &&
        pass "sweep --trace: a timeline per row (r0000: $out0)" ||
        fail "sweep --trace: $(ls "$T/traces" 2>&1 | tr '\n' ' ') ${out0:-} ${out1:-}"
}
"$MX" train --workload mlp --dataset synthetic --steps 3 --trace "$T/z.json" --trace-steps 0 >"$T/z.out" 2>&1
rc=$?
[ $rc -eq 2 ] && pass "--trace-steps 0: exit 2, $(head -1 "$T/z.out")" || fail "--trace-steps 0: exit $rc"

# a path the timeline cannot be written to fails before training (a long run would otherwise
# be lost at its end): exit 2 naming it, at once, and no --record file left behind
for bad in "$T/no-such-dir/t.json" "$T"; do
    start=$(date +%s)
    "$MX" train --workload mlp --dataset synthetic --steps 200000 --trace "$bad" --record "$T/bad.h5" >"$T/b.out" 2>&1
    rc=$?
    [ $rc -eq 2 ] && grep -qF -- "--trace $bad" "$T/b.out" && (($(date +%s) - start < 20)) && [ ! -e "$T/bad.h5" ] &&
        pass "--trace $bad: exit 2 before training, naming it: $(head -1 "$T/b.out")" ||
        fail "--trace $bad: exit $rc after $(($(date +%s) - start)) s: $(head -2 "$T/b.out")"
done

echo "test_trace: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
