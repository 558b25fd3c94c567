#!/usr/bin/env bash
# End-to-end: a data set is checked whole before any training. For each class of bad IDX
# directory (inconsistent splits, bad headers, bad labels, bad sizes), `mxbench train --data`
# and `mxbench sweep --data` both exit 2 with a message naming the file and the bad value,
# and the sweep leaves no results file behind. A good directory is the control.
# usage: test_bad_data.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u

MX=${1:?usage: test_bad_data.sh MXBENCH SOURCE_DIR BUILD_DIR}
case $MX in /*) ;; *) MX=$PWD/$MX ;; esac
[ -x "$MX" ] || { echo "test_bad_data: mxbench binary '$MX' is missing or not executable"; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "test_bad_data: skipped, python3 is needed to write IDX files"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/mxbench-test_bad_data.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

npass=0 nfail=0
pass() { npass=$((npass + 1)); echo "ok: $*"; }
fail() { nfail=$((nfail + 1)); echo "FAIL: $*"; }

# make_idx DIR CASE: a small, consistent IDX directory (28x28, 32 train / 16 test samples,
# labels i % 10), then the one defect CASE names ("good": none).
make_idx() {
    python3 - "$1" "$2" <<'EOF'
import gzip, os, struct, sys
d, case = sys.argv[1], sys.argv[2]
os.makedirs(d, exist_ok=True)

def images(n, rows=28, cols=28, magic=0x803, count=None, extra=b"", cut=0):
    body = bytes((i * 37 + 11) % 256 for i in range(n * rows * cols))
    data = struct.pack(">IIII", magic, n if count is None else count, rows, cols) + body + extra
    return data[:len(data) - cut] if cut else data

def labels(n, bad=None, count=None):
    lab = bytearray(i % 10 for i in range(n))
    for i, v in (bad or {}).items():
        lab[i] = v
    return struct.pack(">II", 0x801, n if count is None else count) + bytes(lab)

TI, TL, EI, EL = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                  "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
f = {TI: images(32), TL: labels(32), EI: images(16), EL: labels(16)}
mutate = {
    "good": lambda: None,
    "test-label-200": lambda: f.update({EL: labels(16, {5: 200})}),
    "test-label-10": lambda: f.update({EL: labels(16, {7: 10})}),
    "train-label-255": lambda: f.update({TL: labels(32, {3: 255})}),
    "test-images-smaller": lambda: f.update({EI: images(16, 14, 14)}),
    "test-images-larger": lambda: f.update({EI: images(16, 32, 32)}),
    "train-count-mismatch": lambda: f.update({TL: labels(31)}),
    "test-count-mismatch": lambda: f.update({EI: images(15)}),
    "test-zero-samples": lambda: f.update({EI: images(0), EL: labels(0)}),
    "train-zero-labels": lambda: f.update({TL: labels(0)}),
    "zero-rows": lambda: f.update({TI: images(0, 0, 28, count=32)}),
    "side-too-long": lambda: f.update({EI: images(0, 70000, 28, count=16)}),
    "dims-overflow": lambda: f.update({TI: struct.pack(">IIII", 0x803, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF)}),
    "huge-declared": lambda: f.update({TI: images(32, count=0x7FFFFFFF)}),
    "huge-declared-gzip": lambda: f.update({TI: None, TI + ".gz": gzip.compress(
        struct.pack(">IIII", 0x803, 1000000, 28, 28))}),
    "labels-4g": lambda: f.update({EL: labels(16, count=0xFFFFFFFF)}),
    "four-dims": lambda: f.update({TI: images(32, magic=0x804)}),
    "truncated": lambda: f.update({EI: images(16, cut=100)}),
    "trailing-data": lambda: f.update({TL: labels(32) + b"junk"}),
    "gzip-bomb": lambda: f.update({EI: None, EI + ".gz": gzip.compress(images(16) + bytes(4 << 20))}),
}
mutate[case]()
for name, data in f.items():
    if data is not None:
        open(os.path.join(d, name), "wb").write(data)
EOF
}

# check DESC WANT_RC WORD... -- CMD...: runs CMD, checks its status and that stderr holds
# every WORD.
check() {
    local desc=$1 want=$2
    shift 2
    local -a words=()
    while [ "$1" != "--" ]; do words+=("$1"); shift; done
    shift
    "$@" >"$T/out" 2>"$T/err"
    local rc=$? problems="" w
    [ $rc -eq "$want" ] || problems+=" expected exit $want, saw $rc;"
    for w in "${words[@]+"${words[@]}"}"; do
        grep -qF -- "$w" "$T/err" || problems+=" expected stderr to contain '$w';"
    done
    if [ -z "$problems" ]; then
        pass "$desc"
    else
        fail "$desc:$problems"
        sed -e 's/^/    stderr: /' "$T/err" | head -10
    fi
}

TRAIN=(train --workload mlp --steps 2 --batch 8 --threads-per-device 1 --quiet)
SWEEP=(sweep --workload mlp --gpus 1 --steps 2 --warmup-steps 1 --batch 8 --threads-per-device 1 --timeout 120)

make_idx "$T/good" good
check "control: train on a good directory" 0 -- "$MX" "${TRAIN[@]}" --data "$T/good"
check "control: sweep --dry-run on a good directory" 0 -- "$MX" "${SWEEP[@]}" --data "$T/good" --dry-run --out "$T/good.h5"

# case | file the message must name | value the message must name (| another word)
cases=(
    "test-label-200|t10k-labels-idx1-ubyte|label 200|accepted 0..9"
    "test-label-10|t10k-labels-idx1-ubyte|label 10 at index 7|accepted 0..9"
    "train-label-255|train-labels-idx1-ubyte|label 255 at index 3|0..254"
    "test-images-smaller|t10k-images-idx3-ubyte|1x14x14|train-images-idx3-ubyte"
    "test-images-larger|t10k-images-idx3-ubyte|1x32x32|1x28x28"
    "train-count-mismatch|train-labels-idx1-ubyte|has 31 labels|has 32 images"
    "test-count-mismatch|t10k-images-idx3-ubyte|has 15 images|has 16 labels"
    "test-zero-samples|t10k-images-idx3-ubyte|0 images|1..2147483647"
    "train-zero-labels|train-labels-idx1-ubyte|0 labels|1..2147483647"
    "zero-rows|train-images-idx3-ubyte|images of 0x28|1..65536"
    "side-too-long|t10k-images-idx3-ubyte|70000x28|1..65536"
    "dims-overflow|train-images-idx3-ubyte|4294967295 images|1..2147483647"
    "huge-declared|train-images-idx3-ubyte|2147483647 images of 28x28|truncated"
    "huge-declared-gzip|train-images-idx3-ubyte.gz|1000000 images of 28x28|gzip file can hold"
    "labels-4g|t10k-labels-idx1-ubyte|4294967295 labels|1..2147483647"
    "four-dims|train-images-idx3-ubyte|0x00000804|declares 4 dimensions"
    "truncated|t10k-images-idx3-ubyte|truncated|16 images of 28x28"
    "trailing-data|train-labels-idx1-ubyte|32 labels|more data"
    "gzip-bomb|t10k-images-idx3-ubyte.gz|16 images of 28x28|more data"
)
ntried=0
for c in "${cases[@]}"; do
    IFS='|' read -r name file value extra <<<"$c"
    make_idx "$T/$name" "$name" || { fail "$name: could not write the directory"; continue; }
    ntried=$((ntried + 1))
    check "train --data $name" 2 "$T/$name/$file" "$value" "$extra" -- "$MX" "${TRAIN[@]}" --data "$T/$name"
    # The sweep must refuse before its first child: exit 2, not a run failing with exit 1.
    check "sweep --data $name" 2 "$T/$name/$file" "$value" "$extra" -- \
        "$MX" "${SWEEP[@]}" --data "$T/$name" --out "$T/$name.h5"
    [ -e "$T/$name.h5" ] && fail "sweep --data $name created its results file"
done

echo "test_bad_data: $ntried bad directories, each through train and sweep"
echo "test_bad_data: $npass passed, $nfail failed"
[ $nfail -eq 0 ]
