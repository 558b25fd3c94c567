#!/usr/bin/env bash
# The layout rules a line breaks on its own, checked without a formatter: no line over 120
# columns, no tab, no trailing whitespace. (.clang-format describes the rest of the style, for
# editors; it is not enforced.) Checks every .c, .h and .cu file that git tracks, build
# directories and out/ aside, or the FILEs given (paths as from the current directory). Lists
# each offence as FILE:LINE: what, then a count; exit 0 when there is none, 1 when there is
# any, 2 when a FILE cannot be read.
# usage: scripts/check-format.sh [FILE...]
set -euo pipefail

MAX=120
if (($#)); then
    files=("$@")
else
    cd "$(dirname "$0")/.."
    mapfile -t files < <(git ls-files -- '*.c' '*.h' '*.cu' | grep -Ev '^(build[^/]*|out)/' || true)
fi
((${#files[@]})) || { echo "check-format: no file to check"; exit 0; }
for f in "${files[@]}"; do
    [[ -f $f && -r $f ]] || { echo "check-format: '$f' is not a readable file" >&2; exit 2; }
done

# Bytes, not characters, under LC_ALL=C: a UTF-8 character counts as one column by leaving its
# continuation bytes (0x80-0xBF) out.
LC_ALL=C awk -v max="$MAX" '
    {
        s = $0
        cols = length($0) - gsub(/[\200-\277]/, "", s)
        bad = 0
        if (cols > max) { printf "%s:%d: %d columns (at most %d)\n", FILENAME, FNR, cols, max; bad = 1; nlong++ }
        if (index($0, "\t")) { printf "%s:%d: tab\n", FILENAME, FNR; bad = 1; ntab++ }
        if ($0 ~ /[ \t\r]$/) { printf "%s:%d: trailing whitespace\n", FILENAME, FNR; bad = 1; ntrail++ }
        if (bad && !(FILENAME in seen)) { seen[FILENAME] = 1; nbad++ }
    }
    END {
        nfiles = ARGC - 1
        n = nlong + ntab + ntrail
        if (!n) { printf "check-format: %d file(s) checked, no problem\n", nfiles; exit 0 }
        printf "check-format: %d problem(s) in %d of %d file(s): %d line(s) over %d columns, %d with a tab, " \
            "%d with trailing whitespace\n", n, nbad, nfiles, nlong + 0, max, ntab + 0, ntrail + 0
        exit 1
    }' "${files[@]}"
