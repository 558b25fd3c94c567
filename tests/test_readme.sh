#!/usr/bin/env bash
# Every command line the README (and docs/*.md, where present) shows in a code block runs as
# written on a machine of the project's kind, as root and on 2 cores:
#   - `mxbench train` and `mxbench sweep` lines parse and pass the configuration checks
#     (run with --dry-run appended: nothing is trained);
#   - every other `mxbench` line runs for real, in a scratch folder holding the files the
#     examples name (out/sweep.h5, baseline.h5, mlp.h5: one small sweep, copied; hosts:
#     this machine);
#   - a bare `mpirun` line is refused: as root or with more ranks than cores it fails as
#     written (`mxbench train --np N` adds what one machine needs);
#   - `scripts/...` lines name executable scripts (not run: the demo and the suite are long).
# usage: test_readme.sh MXBENCH SOURCE_DIR BUILD_DIR
. "$(dirname "$0")/e2e-lib.sh" test_readme "$1"
SRC=$2

docs=("$SRC/README.md")
for f in "$SRC"/docs/*.md; do [ -f "$f" ] && docs+=("$f"); done

# the code blocks' lines, continuations joined, comments and prompts stripped: FILE<TAB>LINE
lines() {
    local f
    for f in "${docs[@]}"; do
        awk '/^ *```/ { inb = !inb; next } inb' "$f" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta' |
            sed -e 's/^ *\$ *//' -e 's/  *#.*$//' -e 's/  */ /g' -e 's/ *$//' |
            grep -E '^(mxbench|mpirun|scripts/)' | sed "s|^|${f#"$SRC"/}\t|"
    done
}

# the files the examples read
mkdir -p out
if ! run fixture "$MX" sweep --workload mlp --dataset synthetic --gpus 1,2 --kvstore device --steps 8 \
    --out out/sweep.h5; then
    echo "test_readme: $npass passed, $nfail failed"
    exit 1
fi
cp out/sweep.h5 baseline.h5 && cp out/sweep.h5 mlp.h5
echo "localhost slots=64" >hosts # the host file of the "across machines" example

n=0
while IFS=$'\t' read -r doc line; do
    n=$((n + 1))
    eval "words=($line)" # the shell's quoting, as a user's shell reads the line
    case ${words[0]} in
    scripts/*)
        [ -x "$SRC/${words[0]}" ] && pass "$doc: '$line': ${words[0]} exists" ||
            fail "$doc: '$line': no executable ${words[0]}"
        continue
        ;;
    mpirun)
        if [[ " $line " == *" --oversubscribe "* && " $line " == *" --allow-run-as-root "* ]]; then
            pass "$doc: '$line': carries what one machine and root need"
        else
            fail "$doc: '$line': fails as root or on fewer cores than ranks as written; show mxbench train --np N"
        fi
        continue
        ;;
    esac
    args=("${words[@]:1}")
    case ${args[0]} in train | sweep) args+=(--dry-run) ;; esac
    timeout 120 "$MX" "${args[@]}" >"$T/line$n.out" 2>"$T/line$n.err"
    rc=$?
    if [ $rc -eq 0 ]; then
        pass "$doc: '$line'"
    else
        fail "$doc: '$line': exit $rc"
        tail -n 5 "$T/line$n.err" | indent
    fi
done < <(lines)
[ "$n" -ge 5 ] || fail "found only $n command lines in ${docs[*]}"

echo "test_readme: $npass passed, $nfail failed ($n command lines)"
[ "$nfail" -eq 0 ]
