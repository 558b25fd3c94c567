#!/usr/bin/env bash
# The docs say what the binary says about its options:
#   - docs/commands.md holds, for every command of mxbench's table (as `mxbench help` lists
#     them), one block between <!-- options:CMD --> and <!-- /options:CMD -->, and each block
#     is exactly what scripts/gen-docs.sh writes there: a blank line, `mxbench help --markdown
#     CMD`, a blank line. A block that differs fails naming the command, with the diff;
#   - every `--option` README.md (and docs/*.md) shows after `mxbench CMD`, in a code block or
#     an inline code span, is an option of CMD, or of train after the `--` of a command that
#     passes TRAIN OPTIONS on (ab, count).
# usage: test_docs_options.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u

MX=${1:?usage: test_docs_options.sh MXBENCH SOURCE_DIR BUILD_DIR}
SRC=${2:?usage: test_docs_options.sh MXBENCH SOURCE_DIR BUILD_DIR}
case $MX in /*) ;; *) MX=$PWD/$MX ;; esac
[ -x "$MX" ] || { echo "test_docs_options: mxbench binary '$MX' is missing or not executable"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/mxbench-test_docs_options.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
DOC=$SRC/docs/commands.md

npass=0 nfail=0
pass() { npass=$((npass + 1)); echo "ok: $*"; }
fail() { nfail=$((nfail + 1)); echo "FAIL: $*"; }

commands=$("$MX" help | sed -n '/^commands:/,/^$/p' | awk 'NF > 1 { print $1 }')
[ -n "$commands" ] || { echo "test_docs_options: '$MX help' lists no command"; exit 1; }

# each command's table, once (the binary takes a while to start)
for cmd in $commands; do
    "$MX" help --markdown "$cmd" >"$T/$cmd.md" || fail "mxbench help --markdown $cmd: exit $?"
done

# ---- docs/commands.md: one generated block per command
for cmd in $commands; do
    open="<!-- options:$cmd -->" close="<!-- /options:$cmd -->"
    nopen=$(grep -cxF -- "$open" "$DOC")
    nclose=$(grep -cxF -- "$close" "$DOC")
    if [ "$nopen" -ne 1 ] || [ "$nclose" -ne 1 ]; then
        fail "docs/commands.md: mxbench $cmd needs one block, '$open' ... '$close' ($nopen opening and" \
            "$nclose closing markers found); add it where its options belong and run scripts/gen-docs.sh"
        continue
    fi
    awk -v first="$open" -v last="$close" '$0 == last { inb = 0 } inb { print } $0 == first { inb = 1 }' "$DOC" \
        >"$T/$cmd.doc"
    { echo; cat "$T/$cmd.md"; echo; } >"$T/$cmd.gen"
    if cmp -s "$T/$cmd.doc" "$T/$cmd.gen"; then
        pass "docs/commands.md: the options of mxbench $cmd are what mxbench help --markdown $cmd prints"
    else
        fail "docs/commands.md: the options of mxbench $cmd differ from what the binary prints (- docs, + binary);" \
            "run scripts/gen-docs.sh MXBENCH and commit docs/commands.md"
        diff -u --label "docs/commands.md ($cmd)" --label "mxbench help --markdown $cmd" "$T/$cmd.doc" "$T/$cmd.gen" |
            sed 's/^/    /'
    fi
done
# a block for a command that is gone would never be checked again
for name in $(sed -n 's/^<!-- options:\([^ ]*\) -->$/\1/p' "$DOC"); do
    grep -qxF -- "$name" <<<"$commands" ||
        fail "docs/commands.md: a block for '$name', which is no mxbench command (commands: ${commands//$'\n'/ })"
done

# ---- README.md and docs/*.md: the options shown after `mxbench CMD` exist
# the options of each command (from its Markdown table) and whether it passes TRAIN OPTIONS
# on after '--' (its usage line says so)
for cmd in $commands; do
    { sed -n 's/^| `\(--[a-z0-9-]*\)` |.*/\1/p' "$T/$cmd.md"; echo --help; echo -h; } >"$T/$cmd.opts"
    "$MX" help "$cmd" | head -1 | grep -qF -- "-- TRAIN OPTIONS" && : >"$T/$cmd.train"
done

# the code-block lines of FILE (continuations joined, comments dropped) and its prose's inline
# code spans: LINE<TAB>TEXT
segments() {
    awk '
        /^ *```/ { inb = !inb; next }
        inb {
            if (cont != "") { line = cont " " $0 } else { line = $0; at = NR }
            if (line ~ /\\$/) { sub(/\\$/, "", line); cont = line; next }
            cont = ""
            sub(/(^| )#.*$/, "", line)
            print at "\t" line
            next
        }
        {
            s = $0
            while (match(s, /`[^`]+`/)) {
                print NR "\t" substr(s, RSTART + 1, RLENGTH - 2)
                s = substr(s, RSTART + RLENGTH)
            }
        }' "$1"
}

# check_options FILE NAME: the options after `mxbench CMD` in FILE (NAME in messages); sets nseen
check_options() {
    nseen=0
    while IFS=$'\t' read -r lineno text; do
        read -ra words <<<"$text"
        cmd="" cur=""
        for w in "${words[@]}"; do
            case $w in
            '|' | '||' | '&&' | ';' | '>'* | '<'* | '2>'*) cmd="" cur=""; continue ;;
            esac
            # a command starts at mxbench; within one, a path to mxbench is an argument (ab BASE NEW)
            if [ -z "$cur" ] && [[ $w == mxbench || $w == */mxbench ]]; then
                cmd=next
                continue
            fi
            if [ "$cmd" = next ]; then
                cmd="" cur=""
                [ -f "$T/$w.opts" ] && cmd=$w cur=$w
                continue
            fi
            [ -n "$cur" ] || continue
            if [ "$w" = "--" ]; then
                if [ -f "$T/$cmd.train" ]; then cur=train; else cur=""; fi
                continue
            fi
            [[ $w =~ ^(--[a-z0-9][a-z0-9-]*)(=.*)?$ ]] || continue
            opt=${BASH_REMATCH[1]}
            nseen=$((nseen + 1))
            where="mxbench $cmd"
            [ "$cur" = "$cmd" ] || where+=" ... -- (options of $cur)"
            if grep -qxF -- "$opt" "$T/$cur.opts"; then
                pass "$2:$lineno: $where $opt"
            else
                fail "$2:$lineno: '$text': mxbench $cur has no option $opt" \
                    "(its options: $(tr '\n' ' ' <"$T/$cur.opts"))"
            fi
        done
    done < <(segments "$1")
}

check_options "$SRC/README.md" README.md
[ "$nseen" -ge 10 ] || fail "README.md: found only $nseen options after 'mxbench CMD'; is the README still read right?"
for f in "$SRC"/docs/*.md; do
    [ -f "$f" ] && check_options "$f" "docs/${f##*/}"
done

echo "test_docs_options: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
