#!/usr/bin/env bash
# scripts/bundle.sh, the relocatable folder a GPU machine or cluster node gets instead of the
# packages:
#  1. the bundle runs from its folder: OUT/mxbench info names this build's commit, and a short
#     training on synthetic data finishes;
#  2. --with-mpi (where Open MPI is installed): OUT/mpi holds mpirun, orted and the plugins, and
#     a 2-rank dist_allreduce job runs through the bundle's own launcher (env.sh puts it first
#     and sets OPAL_PREFIX); where the test may make a private mount namespace (root,
#     unshare -m), the system's Open MPI folders are hidden behind empty ones first, as on a
#     machine without them;
#  3. a bad option and a missing build exit 2, naming them.
# usage: test_bundle.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u
SRC=${2:?usage: test_bundle.sh MXBENCH SOURCE_DIR BUILD_DIR}
case $SRC in /*) ;; *) SRC=$PWD/$SRC ;; esac
# shellcheck source=tests/e2e-lib.sh
. "$SRC/tests/e2e-lib.sh" test_bundle "$1"
BUILD=$(dirname "$(dirname "$MX")") # the build folder of harness/mxbench
B=$T/bundle

# ---- 1. the bundle alone
if run bundle bash "$SRC/scripts/bundle.sh" --build "$BUILD" "$B"; then
    commit=$("$MX" info | sed -n 's/.*(git \([0-9a-f]*\).*/\1/p' | head -1)
    run info "$B/mxbench" info && grep -q "git $commit" "$T/info.out" &&
        pass "the bundle's mxbench info names this build ($commit)" || fail "bundle info: $(head -2 "$T/info.out")"
    run train "$B/mxbench" train --workload mlp --dataset synthetic --steps 5 --quiet &&
        pass "the bundle's mxbench trains"
fi

# ---- 2. Open MPI in the bundle
mpi_path() { ompi_info --path "$1" | sed 's/^[^:]*: *//'; }
if command -v ompi_info >/dev/null 2>&1 && command -v orterun >/dev/null 2>&1; then
    if run bundle-mpi bash "$SRC/scripts/bundle.sh" --build "$BUILD" --with-mpi "$B-mpi"; then
        [ -x "$B-mpi/mpi/bin/mpirun" ] && [ -x "$B-mpi/mpi/bin/orted" ] &&
            [ -n "$(find "$B-mpi/mpi" -name 'mca_*.so' | head -1)" ] &&
            pass "--with-mpi: mpirun, orted and the plugins under mpi/" || fail "--with-mpi: $(find "$B-mpi/mpi" | head)"
        job=". '$B-mpi/env.sh' && [ \"\$(command -v mpirun)\" = '$B-mpi/mpi/bin/mpirun' ] &&
            timeout 120 mpirun --allow-run-as-root --oversubscribe --mca btl self,tcp -np 2 '$B-mpi/mxbench' train \
            --quiet --workload mlp --dataset synthetic --steps 5 --kvstore dist_allreduce --batch 16"
        # the system's Open MPI folders (its libraries' and plugins', its data, its settings),
        # each behind an empty one
        mkdir -p "$T/empty"
        hidden="" hide=""
        for d in "$(dirname "$(mpi_path pkglibdir)")" "$(mpi_path pkgdatadir)" "$(mpi_path sysconfdir)"; do
            [ -d "$d" ] && hide+="mount --bind '$T/empty' '$d' && "
        done
        if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
            hidden=" with the system's Open MPI folders hidden"
            run mpi-job unshare -m bash -c "$hide $job"
        else
            run mpi-job bash -c "$job"
        fi && grep -q "2 workers" "$T/mpi-job.out" &&
            pass "a 2-rank dist_allreduce job through the bundle's mpirun$hidden" ||
            fail "the bundle's mpirun$hidden: $(tail -3 "$T/mpi-job.out")"
    fi
else
    echo "test_bundle: Open MPI's ompi_info or orterun not found: --with-mpi not tried"
fi

# ---- 3. refusals
refused() { # refused NAME WHAT ARGS...: bundle.sh ARGS exits 2 and its message holds WHAT
    local name=$1 what=$2
    shift 2
    bash "$SRC/scripts/bundle.sh" "$@" >"$T/$name.out" 2>"$T/$name.err"
    local rc=$?
    [ $rc -eq 2 ] && grep -qF -- "$what" "$T/$name.err" && pass "bundle.sh $*: exit 2, names $what" ||
        fail "bundle.sh $*: exit $rc: $(cat "$T/$name.err")"
}
refused bad-option --with-nothing --with-nothing "$T/x"
refused no-build "$T/none" --build "$T/none" "$T/y"

echo "test_bundle: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
