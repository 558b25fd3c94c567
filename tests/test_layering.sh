#!/usr/bin/env bash
# The folders' order as DESIGN.md draws it ("Layers of the code": one folder a line, top to
# bottom, its library last) is the order the code keeps: no library of the build uses a
# symbol that a library drawn above it defines (read from the static libraries with nm, so a
# call counts as well as an include), every library the build makes is drawn, and every
# drawn folder exists.
# usage: test_layering.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u
MX=${1:?usage: test_layering.sh MXBENCH SOURCE_DIR BUILD_DIR}
SRC=$(cd "${2:?usage: test_layering.sh MXBENCH SOURCE_DIR BUILD_DIR}" && pwd)
ROOT=$(cd "${3:?usage: test_layering.sh MXBENCH SOURCE_DIR BUILD_DIR}/.." && pwd) # the build's top
# shellcheck source=tests/e2e-lib.sh
. "$SRC/tests/e2e-lib.sh" test_layering "$MX"
trap 'rm -rf "$T"' EXIT

# folder and library of each drawn entry, top first (an entry's text may run over several
# lines; its library ends one of them)
awk '/^## Layers of the code/ {in_s = 1} in_s && /^```/ {n++; if (n == 2) exit; next}
     in_s && n == 1 && /^[a-z]/ {dir = $1}
     in_s && n == 1 && dir ~ /\/$/ && $NF ~ /^mx_/ {print dir, $NF}' "$SRC/DESIGN.md" >"$T/drawn"
[ -s "$T/drawn" ] && pass "DESIGN.md draws $(wc -l <"$T/drawn") libraries" || fail "no folder/library lines in DESIGN.md"

libs=()
while read -r dir lib; do
    [ -d "$SRC/$dir" ] || fail "DESIGN.md draws $dir, which does not exist"
    a=$ROOT/$dir/lib$lib.a
    if [ -f "$a" ]; then
        libs+=("$a")
    elif [ "$lib" != mx_cuda ] && [ "$lib" != mx_comm_nccl ]; then # built only where the CUDA toolkit is found
        fail "DESIGN.md draws $lib in $dir: no $a in this build"
    fi
done <"$T/drawn"

# every library the build made is drawn
while read -r a; do
    grep -q " $(basename "$a" .a | sed 's/^lib//')$" "$T/drawn" || fail "the build makes $a, which DESIGN.md does not draw"
done < <(find "$ROOT" -name 'libmx_*.a' -not -path '*/CMakeFiles/*' | grep -v '/tests/')

# each library's undefined symbols against what the ones drawn above it define
ups=0
for ((i = 0; i < ${#libs[@]}; i++)); do
    nm "${libs[i]}" 2>/dev/null | awk '$1 == "U" {print $2}' | sort -u >"$T/u$i"
    nm --defined-only "${libs[i]}" 2>/dev/null | awk 'NF == 3 && $2 ~ /[TDBR]/ {print $3}' | sort -u >"$T/d$i"
done
for ((i = 0; i < ${#libs[@]}; i++)); do
    for ((j = 0; j < i; j++)); do
        used=$(comm -12 "$T/u$i" "$T/d$j" | head -3 | tr '\n' ' ')
        [ -z "$used" ] && continue
        ups=$((ups + 1))
        fail "$(basename "${libs[i]}") uses $(basename "${libs[j]}"), drawn above it: $used"
    done
done
[ "$ups" -eq 0 ] && pass "no library uses one drawn above it (${#libs[@]} libraries)"

echo "test_layering: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
