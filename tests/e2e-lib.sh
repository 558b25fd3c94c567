# The opening the end-to-end scripts of compression and mixed precision share (sourced):
# MX as an absolute path, h5dump required, a scratch directory $T (the working directory,
# removed at exit), pass/fail counters, attr FILE NAME [RUN] (a run attribute, r0000 by
# default) and run NAME CMD... (its stdout and stderr kept in $T; a failure is counted and
# shows the command and the tail of its stderr), indent FILE... and mx_expect (below).
# usage: . e2e-lib.sh SCRIPT_NAME MXBENCH
E2E_NAME=$1
MX=$2
case $MX in /*) ;; *) MX=$PWD/$MX ;; esac
[ -x "$MX" ] || { echo "$E2E_NAME: mxbench binary '$MX' is missing or not executable"; exit 1; }
command -v h5dump >/dev/null 2>&1 || { echo "$E2E_NAME: h5dump not found (apt-get install hdf5-tools)"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/mxbench-$E2E_NAME.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

npass=0 nfail=0
pass() { npass=$((npass + 1)); echo "ok: $*"; }
fail() { nfail=$((nfail + 1)); echo "FAIL: $*"; }
attr() { h5dump -a "/runs/${3:-r0000}/$2" "$1" 2>/dev/null | sed -n 's/^ *(0): *//p' | head -1; }
run() { # run NAME CMD...
    local name=$1
    shift
    "$@" >"$T/$name.out" 2>"$T/$name.err"
    local rc=$?
    [ $rc -eq 0 ] && return 0
    fail "$name: exit $rc from: $*"
    tail -n 15 "$T/$name.err" | sed 's/^/    /'
    return 1
}
indent() { sed -e 's/^/    | /' "$@"; }
# mx_expect STEM WANT DESC ARGS...: runs `mxbench ARGS` with its output in $T/STEM.out and
# $T/STEM.err (rc set to its exit); a pass when it exits WANT, else a failure that shows the
# command and both outputs.
mx_expect() {
    local stem=$1 want=$2 desc=$3
    shift 3
    "$MX" "$@" >"$T/$stem.out" 2>"$T/$stem.err"
    rc=$?
    if [ $rc -eq "$want" ]; then
        pass "$desc: exit $rc"
        return 0
    fi
    fail "$desc (mxbench $*): expected exit $want, saw $rc"
    indent "$T/$stem.out" "$T/$stem.err"
    return 1
}
