#!/usr/bin/env bash
# Regenerates the option tables of docs/commands.md from a built mxbench, in place: the lines
# between <!-- options:CMD --> and <!-- /options:CMD --> become a blank line, the output of
# `mxbench help --markdown CMD` and a blank line (the blank lines keep the markers out of the
# table); everything else in the file stays as it is. The tables come from the commands' option
# tables, so after changing an option or its help text, run this and commit the result:
# tests/test_docs_options.sh fails until the docs say what the binary says.
# usage: scripts/gen-docs.sh [MXBENCH [FILE]]
#   MXBENCH  the built binary (default: build/harness/mxbench)
#   FILE     the page to update (default: docs/commands.md)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mx=${1:-$root/build/harness/mxbench}
doc=${2:-$root/docs/commands.md}
die() {
    echo "gen-docs.sh: $*" >&2
    exit 2
}
[ -x "$mx" ] || die "no mxbench binary at '$mx': build it (scripts/build.sh) or pass its path"
[ -f "$doc" ] || die "no file '$doc'"

# the commands of mxbench's table, as `mxbench help` lists them
commands=$("$mx" help | sed -n '/^commands:/,/^$/p' | awk 'NF > 1 { printf "%s ", $1 }')
[ -n "$commands" ] || die "'$mx help' lists no command"

tmp=$(mktemp "$doc.XXXXXX")
trap 'rm -f "$tmp"' EXIT
chmod --reference="$doc" "$tmp" # the page keeps its permissions once moved over
exec 3>"$tmp"
in="" # the command whose block is being replaced
open_line=0 n=0 lineno=0 done_list=" "
while IFS= read -r line || [ -n "$line" ]; do
    lineno=$((lineno + 1))
    if [ -z "$in" ]; then
        printf '%s\n' "$line" >&3
        if [[ $line =~ ^\<!--\ options:([a-z0-9-]+)\ --\>$ ]]; then
            in=${BASH_REMATCH[1]}
            open_line=$lineno
            [[ " $commands" == *" $in "* ]] ||
                die "$doc:$lineno: a block for '$in', which is no mxbench command (commands: $commands)"
            [[ $done_list != *" $in "* ]] || die "$doc:$lineno: a second block for '$in'"
            echo >&3
            "$mx" help --markdown "$in" >&3 || die "$doc:$lineno: 'mxbench help --markdown $in' failed"
            echo >&3
        elif [[ $line =~ ^\<!--\ /options: ]]; then
            die "$doc:$lineno: '$line' closes no block"
        fi
    elif [ "$line" = "<!-- /options:$in -->" ]; then
        printf '%s\n' "$line" >&3
        done_list+="$in "
        in=""
        n=$((n + 1))
    elif [[ $line =~ ^\<!--\ /?options: ]]; then
        die "$doc:$lineno: '$line' inside the block of '$in' opened on line $open_line"
    fi
done <"$doc"
exec 3>&-
[ -z "$in" ] || die "$doc:$open_line: the block of '$in' is not closed (<!-- /options:$in -->)"

missing=""
for c in $commands; do [[ $done_list == *" $c "* ]] || missing+=" $c"; done
if cmp -s "$tmp" "$doc"; then
    echo "gen-docs.sh: $doc: $n option tables, all up to date"
else
    mv "$tmp" "$doc"
    echo "gen-docs.sh: $doc: $n option tables regenerated"
fi
if [ -n "$missing" ]; then
    echo "gen-docs.sh: $doc has no option table for:$missing; add <!-- options:CMD --> and <!-- /options:CMD -->" \
        "where each belongs and run this again" >&2
    exit 1
fi
