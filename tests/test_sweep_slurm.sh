#!/usr/bin/env bash
# End-to-end tests of `mxbench sweep` inside a Slurm allocation, on a one-node Slurm that the
# test starts on this machine (slurmctld and slurmd from Debian's slurm-wlm, auth/none, ports
# of its own, every file in a temporary directory; skipped, 77, where they cannot start):
# (a) under salloc the dist_* rows are srun steps: every row ok, the oversubscribed row
# counted against the allocation's CPUs and warned of, every rank recorded; (b) the dry run
# names srun --ntasks, and --launcher mpirun inside the allocation runs too; (c) a rank killed
# with SIGKILL fails its row naming the rank, and the next row runs; (d) `mxbench info` names
# the job; (e) bad launcher options exit 2 naming the value, outside and inside an allocation.
# usage: test_sweep_slurm.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u

MX=${1:?usage: test_sweep_slurm.sh MXBENCH SOURCE_DIR BUILD_DIR}
case $MX in /*) ;; *) MX=$PWD/$MX ;; esac
[ -x "$MX" ] || { echo "test_sweep_slurm: mxbench binary '$MX' is missing or not executable"; exit 1; }
MX=$(readlink -f "$MX")
# a Slurm the test did not start (CI inside a job) must not leak into the cases
for v in $(env | sed -n 's/^\(SLURM_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
export PATH=$PATH:/usr/sbin:/sbin
for p in slurmctld slurmd salloc srun sinfo; do
    command -v $p >/dev/null 2>&1 || { echo "skip: $p not found (apt-get install slurm-wlm)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "skip: starting slurmd takes root"; exit 77; }
command -v mpirun >/dev/null 2>&1 || { echo "skip: mpirun not found (apt-get install openmpi-bin)"; exit 77; }
if "$MX" sweep --kvstore dist_sync --gpus 2 --workload mlp --dataset synthetic --steps 10 --dry-run 2>&1 |
    grep -q "needs MPI"; then
    echo "skip: this mxbench is built without MPI (its dist_* rows are skipped)"
    exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/mxbench-test_sweep_slurm.XXXXXX") || exit 1
chmod 755 "$T" # slurmd's step daemons read the configuration
cd "$T" || exit 1
npass=0 nfail=0
pass() { npass=$((npass + 1)); echo "ok: $*"; }
fail() { nfail=$((nfail + 1)); echo "FAIL: $*"; }
section() { echo "---- $* ($(date +%T))"; }

# ---- the one-node Slurm
H=$(hostname -s)
PORT=$((20000 + RANDOM % 20000))
mkdir -p "$T/state" "$T/spool"
cat >"$T/slurm.conf" <<EOF
ClusterName=mxbenchtest
SlurmctldHost=$H(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
AuthType=auth/none
CredType=cred/none
MpiDefault=none
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$H NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=$H Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF=$T/slurm.conf
cleanup() {
    local p
    for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
    for f in "$T/slurmd.pid" "$T/slurmctld.pid"; do [ -s "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done
    for p in $DAEMONS; do kill -9 "$p" 2>/dev/null; done
    sleep 0.2
    rm -rf "$T"
}
DAEMONS=""
trap cleanup EXIT
slurmctld -D -i -f "$T/slurm.conf" >"$T/slurmctld.out" 2>&1 &
DAEMONS+=" $!"
slurmd -D -N "$H" -f "$T/slurm.conf" >"$T/slurmd.out" 2>&1 &
DAEMONS+=" $!"
disown -a # their end (cleanup) is no news
up=0
for i in $(seq 100); do
    [ "$(timeout 5 sinfo -h -o %T 2>/dev/null)" = idle ] && { up=1; break; }
    sleep 0.3
done
if [ $up = 0 ]; then
    echo "skip: the one-node Slurm did not come up within 30 s:"
    tail -5 "$T/slurmctld.out" "$T/slurmd.out" "$T/slurmctld.log" "$T/slurmd.log" 2>/dev/null
    exit 77
fi
# one-off salloc: a shell of the allocation (2 tasks) running the rest of the line
inside() { timeout 120 salloc -Q -n 2 "$@"; }
D=(sweep --workload mlp --dataset synthetic --steps 10 --batch 32)

# ---- (a) the dist_* rows as srun steps
section "(a) salloc -n 2: sweep dist_sync,dist_allreduce x 1,2 devices"
A=$T/a.h5
inside "$MX" "${D[@]}" --kvstore dist_sync,dist_allreduce --gpus 1,2 --out "$A" >"$T/a.out" 2>"$T/a.err"
rc=$?
[ $rc -eq 0 ] && pass "the sweep exits 0 inside the allocation" || { fail "sweep (a): exit $rc"; tail -20 "$T/a.err"; }
grep -q "each its own .*srun job .* on the nodes of Slurm job [0-9]*: 1 node ($H), 2 tasks, 2 CPUs" "$T/a.err" &&
    pass "the sweep says its dist_* rows are srun jobs on the allocation's node" ||
    fail "no line naming srun and the Slurm job: $(grep 'dist_\* row' "$T/a.err")"
"$MX" report "$A" --format csv >"$T/a.csv" 2>/dev/null
rows=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
    { gsub(/"/, ""); print $h["kvstore"], $h["gpus"], $h["status"], $h["workers"], $h["servers"], $h["nranks"],
      $h["oversubscribed"] }' "$T/a.csv" | sort)
want="dist_allreduce 1 ok 1 0 1 0
dist_allreduce 2 ok 2 0 2 0
dist_sync 1 ok 1 1 2 0
dist_sync 2 ok 2 2 4 1"
[ "$rows" = "$want" ] && pass "4 rows ok: workers, servers, ranks as the rule says; 4 ranks on 2 CPUs oversubscribed" ||
    fail "rows (kvstore gpus status workers servers ranks oversubscribed): $(echo "$rows" | tr '\n' ';')"
[ "$(grep -c "warning: 1 of 4 rows ask for more than the Slurm allocation's 2 CPUs: row 2 (4 ranks" "$T/a.err")" = 1 ] &&
    pass "one warning, counted against the allocation's CPUs" || fail "no warning naming the allocation's 2 CPUs"

# ---- (b) the dry run, and mpirun inside the allocation
section "(b) --dry-run under srun; --launcher mpirun inside the allocation"
inside "$MX" "${D[@]}" --kvstore dist_sync --gpus 2 --dry-run >"$T/b.out" 2>&1 &&
    grep -q "srun --ntasks=4: 2 worker(s) + 2 server(s)" "$T/b.out" && pass "the dry run names srun --ntasks=4" ||
    fail "dry run: $(cat "$T/b.out")"
inside "$MX" "${D[@]}" --kvstore dist_allreduce --gpus 2 --launcher mpirun --out "$T/b.h5" >"$T/b2.out" 2>&1 &&
    grep -q "each its own .*mpirun job" "$T/b2.out" && grep -q "dist_allreduce.*: ok" "$T/b2.out" &&
    pass "--launcher mpirun inside the allocation: the row runs under mpirun, ok" ||
    fail "--launcher mpirun inside the allocation: $(tail -5 "$T/b2.out")"

# ---- (c) a rank killed
section "(c) a rank killed with SIGKILL"
# pid_of PREFIX PATTERN: the pid of the process whose command line starts with PREFIX and holds PATTERN
pid_of() {
    local f c
    for f in /proc/[0-9]*/cmdline; do
        c=$(tr '\0' ' ' 2>/dev/null <"$f") || continue
        case $c in "$1"*"$2"*) f=${f#/proc/}; echo "${f%/cmdline}"; return ;; esac
    done
}
# rank_pid PATTERN N: the pid of the srun task N whose command line holds PATTERN
rank_pid() {
    local f c p
    for f in /proc/[0-9]*/cmdline; do
        c=$(tr '\0' ' ' 2>/dev/null <"$f") || continue
        case $c in "$MX train "*"$1"*)
            p=${f#/proc/} p=${p%/cmdline}
            tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qx "SLURM_PROCID=$2" && { echo "$p"; return; } ;;
        esac
    done
}
C=$T/c.h5
start=$(date +%s)
inside "$MX" sweep --workload mlp --dataset synthetic --steps 100000 --batch 32 --kvstore dist_allreduce,dist_sync \
    --gpus 2 --servers 1 --timeout 90 --out "$C" >"$T/c.out" 2>"$T/c.err" &
sweep=$!
victim=""
for i in $(seq 150); do
    victim=$(rank_pid "$C" 1)
    [ -n "$victim" ] && break
    sleep 0.2
done
if [ -z "$victim" ]; then
    fail "rank 1 of the first row never appeared"
else
    sleep 1
    kill -9 "$victim"
    # the second row runs 100000 steps; once it is seen started, the first has ended
    for i in $(seq 300); do
        grep -q "\[2/2\]" "$T/c.err" && break
        sleep 0.1
    done
    grep -q "\[1/2\].*failed:.*rank 1 (worker 1)" "$T/c.err" && [ $(($(date +%s) - start)) -lt 60 ] &&
        pass "the killed rank fails its row, named (rank 1, worker 1), and the next row starts" ||
        fail "after killing rank 1: $(grep '\[1/2\]' "$T/c.err" | tail -1)"
fi
# the sweep itself (salloc's child) ends its running row on SIGTERM, and salloc then ends
p=$(pid_of "$MX sweep " "$C")
[ -n "$p" ] && kill -TERM "$p"
wait $sweep 2>/dev/null

# ---- (d) mxbench info
section "(d) mxbench info inside the allocation"
inside "$MX" info >"$T/d.out" 2>&1
grep -q "^  slurm    job [0-9]*: 1 node ($H), 2 tasks, 2 CPUs: a sweep's dist_\* rows are srun steps" "$T/d.out" &&
    pass "info names the job, its node, tasks and CPUs" || fail "info: $(grep slurm "$T/d.out")"
"$MX" info | grep -q "^  slurm    not in a Slurm allocation" && pass "info outside: not in a Slurm allocation" ||
    fail "info outside an allocation: $("$MX" info | grep slurm)"

# ---- (e) bad input
section "(e) bad launcher options exit 2 naming the value"
expect2() { # what PATTERN command...
    local what=$1 pat=$2
    shift 2
    "$@" >"$T/e.out" 2>&1
    local rc=$?
    [ $rc = 2 ] && grep -q -- "$pat" "$T/e.out" && pass "$what: exit 2, '$pat'" ||
        fail "$what: expected exit 2 and '$pat', saw $rc: $(head -2 "$T/e.out")"
}
E=("${D[@]}" --kvstore dist_allreduce --gpus 2 --dry-run)
expect2 "srun outside an allocation" "SLURM_JOB_ID is unset" "$MX" "${E[@]}" --launcher srun
expect2 "--srun-args under mpirun" "--srun-args applies to --launcher srun" "$MX" "${E[@]}" --srun-args "--exclusive"
expect2 "a launcher not accepted" "'pbs' is not accepted" "$MX" "${E[@]}" --launcher pbs
expect2 "SLURM_NTASKS not a count" "SLURM_NTASKS='x2'" env SLURM_JOB_ID=7 SLURM_NTASKS=x2 "$MX" "${E[@]}"
expect2 "--hostfile with srun" "--hostfile applies to --launcher mpirun" inside "$MX" "${E[@]}" --launcher srun \
    --hostfile /etc/hostname
expect2 "--srun-args setting the ranks" "--ntasks=3 is set by the sweep" inside "$MX" "${E[@]}" \
    --srun-args "--ntasks=3"

echo "test_sweep_slurm: $npass passed, $nfail failed"
[ $nfail -eq 0 ]
