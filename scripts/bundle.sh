#!/usr/bin/env bash
# Makes a relocatable folder of an mxbench build, to run on a machine without its packages
# (a cluster node, a GPU machine with no package registry):
#   OUT/bin/mxbench            the binary (and, with --with-tests, the GPU tests test_cuda_ops,
#                              test_cuda_seq, test_comm_nccl and test_cuda_train.sh, their
#                              helper params_diff and bench/gpu_gemm_ceiling)
#   OUT/lib/                   every shared library they need (ldd) that is not the C library
#                              itself or the CUDA driver
#   OUT/mxbench                a wrapper that sets the library path and runs bin/mxbench
#   OUT/env.sh                 the same library path, for `. OUT/env.sh` before the tests
#   OUT/mpi/                   with --with-mpi: Open MPI's launcher (mpirun, orted), its plugins
#                              and help texts, laid out as under its prefix, so that the dist_*
#                              kvstores and their GPU tests run where Open MPI is not installed
#                              (env.sh sets OPAL_PREFIX to it and puts its bin/ first on PATH:
#                              the bundled mxbench needs the launcher of its own libmpi)
# cuDNN, cuBLAS and NCCL are large (cuDNN alone is near 1 GB) and GPU machines have them, so
# they are left out unless --with-cuda-libs; at run time the wrapper looks for them in the
# bundle, then in the lib folders of pip's nvidia-* packages (nvidia/*/lib under every
# site-packages of the python3 on PATH: PyTorch installs them), then in the system's paths
# (ld.so.conf, /usr/local/cuda). `OUT/mxbench info` says which versions it found.
# usage: scripts/bundle.sh [--build DIR] [--with-tests] [--with-cuda-libs] [--with-mpi] OUT
set -euo pipefail
BUILD=build tests=0 cuda_libs=0 mpi=0 out=
usage() { sed -n 's/^# usage: //p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
        --build) BUILD=${2:?--build needs a directory}; shift 2 ;;
        --with-tests) tests=1; shift ;;
        --with-cuda-libs) cuda_libs=1; shift ;;
        --with-mpi) mpi=1; shift ;;
        -h|--help) sed -n '2,/^# usage/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "bundle.sh: unknown option '$1'" >&2; usage ;;
        *) [ -z "$out" ] || { echo "bundle.sh: one output folder, not '$out' and '$1'" >&2; usage; }; out=$1; shift ;;
    esac
done
[ -n "$out" ] || usage
bin=$BUILD/harness/mxbench
[ -x "$bin" ] || { echo "bundle.sh: no mxbench binary at $bin (build first: scripts/build.sh)" >&2; exit 2; }
progs=("$bin")
if [ $tests = 1 ]; then
    for t in tests/test_cuda_ops tests/test_cuda_seq tests/test_comm_nccl tests/params_diff bench/gpu_gemm_ceiling; do
        [ -x "$BUILD/$t" ] || { echo "bundle.sh: --with-tests: $BUILD/$t is missing (a CUDA build with tests)" >&2; exit 2; }
        progs+=("$BUILD/$t")
    done
fi
# --with-mpi: the folders of Open MPI's install (ompi_info --path), each at its place under the
# prefix; ldd then also reads the launcher and every plugin, whose libraries (PMIx, hwloc,
# libevent, UCX...) the target may lack
mpi_files=()
if [ $mpi = 1 ]; then
    if ! command -v ompi_info >/dev/null || ! command -v orterun >/dev/null || ! command -v orted >/dev/null; then
        echo "bundle.sh: --with-mpi: Open MPI's ompi_info, orterun and orted not found (apt-get install openmpi-bin)" >&2
        exit 2
    fi
    mpi_path() { ompi_info --path "$1" | sed 's/^[^:]*: *//'; }
    prefix=$(mpi_path prefix) pkglib=$(mpi_path pkglibdir) pkgdata=$(mpi_path pkgdatadir)
    case $pkglib$pkgdata in "$prefix"/*"$prefix"/*) ;; *)
        echo "bundle.sh: --with-mpi: Open MPI's plugins ($pkglib) or data ($pkgdata) lie outside its prefix $prefix" >&2
        exit 2 ;;
    esac
    mpi_files=("$(command -v orterun)" "$(command -v orted)" "$pkglib"/*.so)
fi
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
cp "${progs[@]}" "$out/bin/"
[ $tests = 1 ] && cp "$(dirname "$0")/../tests/test_cuda_train.sh" "$out/bin/"
if [ $mpi = 1 ]; then
    mkdir -p "$out/mpi/bin" "$out/mpi/${pkglib#"$prefix"/}" "$out/mpi/${pkgdata#"$prefix"/}"
    cp "$(command -v orterun)" "$(command -v orted)" "$out/mpi/bin/"
    ln -s orterun "$out/mpi/bin/mpirun"
    cp -a "$pkglib"/. "$out/mpi/${pkglib#"$prefix"/}/"
    cp -a "$pkgdata"/. "$out/mpi/${pkgdata#"$prefix"/}/"
fi

# Not bundled: the C library's own parts (the target has its own, and they must match its
# loader), the CUDA driver (it must match the GPU's kernel module), and by default the CUDA
# math and communication libraries (found on the target, above).
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libutil\.so|libcuda\.so|libnvidia-)'
cudaskip='^(libcudnn|libcublas|libcublasLt|libnccl)'
n=0
for p in "${progs[@]}" "${mpi_files[@]}"; do
    ldd "$p" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
    [[ $name =~ $skip ]] && continue
    [ $cuda_libs = 0 ] && [[ $name =~ $cudaskip ]] && continue
    cp -L "$path" "$out/lib/$name"
done
n=$(find "$out/lib" -type f | wc -l)

cat >"$out/env.sh" <<'ENV'
# Sourced: the library path of this bundle, then pip's nvidia-* libraries (cuDNN, cuBLAS,
# NCCL), then whatever the caller had.
_mx_here=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)
_mx_path=$_mx_here/lib
for _mx_site in $(python3 -c 'import site, sys; print(" ".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null); do
    for _mx_d in "$_mx_site"/nvidia/*/lib; do [ -d "$_mx_d" ] && _mx_path=$_mx_path:$_mx_d; done
done
[ -d /usr/local/cuda/lib64 ] && _mx_path=$_mx_path:/usr/local/cuda/lib64
export LD_LIBRARY_PATH=$_mx_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# a bundled Open MPI (--with-mpi): its launcher, found through OPAL_PREFIX wherever the bundle lies
if [ -x "$_mx_here/mpi/bin/mpirun" ]; then
    export OPAL_PREFIX=$_mx_here/mpi PATH=$_mx_here/mpi/bin:$PATH
fi
unset _mx_here _mx_path _mx_site _mx_d
ENV
cat >"$out/mxbench" <<'WRAP'
#!/usr/bin/env bash
# mxbench from this bundle: its libraries first (env.sh), then the binary with every argument
. "$(cd "$(dirname "$0")" && pwd)/env.sh"
exec "$(cd "$(dirname "$0")" && pwd)/bin/mxbench" "$@"
WRAP
chmod +x "$out/mxbench"
echo "bundle.sh: $out: ${#progs[@]} program(s), $n libraries ($(du -sh "$out" | cut -f1)); run $out/mxbench"
