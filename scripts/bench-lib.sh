# shellcheck shell=bash disable=SC2153 # ROUNDS, CONFIGS, MX, ERR, TMP: the sourcing script sets them
# Shared by the benchmark scripts (sourced): the opening and closing lines, rounds in rotating
# order, one timed run of a configuration (record_run: its figures from its record; or
# train_throughput: the summary line's), medians over rounds, formatting, and the machine's
# load. Expects MX (the mxbench binary), ERR (a log for stderr), TMP (a scratch directory) and
# NCPU.

# An option's value: an integer >= the minimum, or exit 2 naming the script, option and value.
need_int() { # option value minimum
    if ! [[ ${2-} =~ ^[0-9]+$ ]] || (($2 < $3)); then
        echo "${0##*/}: $1 '${2-}': expected an integer >= $3" >&2
        exit 2
    fi
}

load1() { cut -d' ' -f1 /proc/loadavg; }
high_load() { awk -v l="$(load1)" -v n="$NCPU" 'BEGIN {exit !(l > 0.5 * n)}'; }

# Runs every entry of the array CONFIGS once per round, ROUNDS rounds, calling run_one with
# the entry (ROUND is set): each round starts further along the list and odd rounds run it
# backwards, so that no configuration always runs first, last or after the same neighbour on
# a machine whose speed drifts.
interleave_rounds() {
    local n=${#CONFIGS[@]} start i j
    for ((ROUND = 0; ROUND < ROUNDS; ROUND++)); do
        start=$((ROUND * n / ROUNDS))
        for ((i = 0; i < n; i++)); do
            if ((ROUND % 2)); then j=$(((start - i + n) % n)); else j=$(((start + i) % n)); fi
            run_one "${CONFIGS[j]}"
        done
    done
}

# One record's figures: "mxbench report --format csv" (header + one row), fields by name; a
# quoted field may hold commas. Prints the values asked for, "nan" for an empty or missing one.
csv_get() { # file field...
    "$MX" report "$1" --format csv 2>>"$ERR" | awk -v want="${*:2}" '
        function parse(line, out,   n, i, c, f, q) {
            n = 0; f = ""; q = 0
            for (i = 1; i <= length(line); i++) {
                c = substr(line, i, 1)
                if (q) { if (c == "\"") { if (substr(line, i + 1, 1) == "\"") { f = f c; i++ } else q = 0 } else f = f c }
                else if (c == "\"") q = 1
                else if (c == ",") { out[++n] = f; f = "" }
                else f = f c
            }
            out[++n] = f
            return n
        }
        NR == 1 { n = parse($0, h); for (i = 1; i <= n; i++) col[h[i]] = i; next }
        NR == 2 { parse($0, v); m = split(want, w, " "); s = ""
                  for (i = 1; i <= m; i++) { x = (w[i] in col) ? v[col[w[i]]] : ""; s = s (i > 1 ? " " : "") (x == "" ? "nan" : x) }
                  print s; done = 1; exit }
        END { if (!done) print "nan" }'
}
# ---- figures: column c of a file, its median over the rounds (nan rows left out)
med() { # file column
    [[ -s $1 ]] || { echo nan; return; }
    awk -v c="$2" '$c != "nan" && $c != "-nan" {print $c}' "$1" | sort -g |
        awk '{v[NR] = $1} END {if (!NR) print "nan"; else printf "%.10g\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
# per-round ratio of column ca of file a to column cb of file b, times k: its median
med_ratio() { # a ca b cb k
    [[ -s $1 && -s $3 ]] || { echo nan; return; }
    paste -d' ' "$1" "$3" | awk -v ca="$2" -v cb="$(($4 + $(head -1 "$1" | wc -w)))" -v k="$5" \
        '$ca != "nan" && $cb != "nan" && $cb > 0 {print $ca / ($cb * k)}' >"$TMP/ratio"
    med "$TMP/ratio" 1
}
# shellcheck disable=SC2059 # the format is the caller's
fmt() { # printf format, value (nan prints as -)
    if [[ $2 == nan || $2 == -nan || -z $2 ]]; then printf -- -; else printf "$1" "$2"; fi
}
scale() { awk -v x="$1" -v k="$2" 'BEGIN {print x == "nan" ? "nan" : x * k}'; }

# One timed run of one configuration in one round, a row for the rounds' medians (med,
# med_ratio): runs COMMAND (an `mxbench train` command line, mpirun's in front of it or not)
# with --quiet --record RECORD --force, its stderr appended to $ERR, then appends to the file
# ROWS the record's figures that FIELDS names (csv_get's names, status last: checked, not
# written) and the columns that the function EXTRA prints from RECORD. A run that fails or
# whose status is not ok gets a row of nan, so that every round has its row. A line says what
# became of the run: "  round R LABEL failed; see ERR", "... status S, left out", or
# "  round R OK_LABEL T samples/s" (T: FIELDS' first figure; OK_LABEL is LABEL by default).
# usage: record_run --rows FILE --record FILE --label TEXT [--ok-label TEXT] --fields LIST
#                   [--extra FUNCTION COLUMNS] -- COMMAND...
record_run() {
    local rows record label ok_label="" fields extra_fn="" extra_cols=0 vals nan_row status
    while (($#)); do
        case $1 in
        --rows) rows=$2; shift 2 ;;
        --record) record=$2; shift 2 ;;
        --label) label=$2; shift 2 ;;
        --ok-label) ok_label=$2; shift 2 ;;
        --fields) fields=$2; shift 2 ;;
        --extra) extra_fn=$2 extra_cols=$3; shift 3 ;;
        --) shift; break ;;
        *) echo "record_run: unknown option '$1'" >&2; return 2 ;;
        esac
    done
    nan_row=$(awk -v n=$(($(wc -w <<<"$fields") - 1 + extra_cols)) \
        'BEGIN {for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? " " : ""), "nan"; print ""}')
    if ! "$@" --quiet --record "$record" --force >/dev/null 2>>"$ERR"; then
        printf '  round %d %s failed; see %s\n' "$ROUND" "$label" "$ERR"
        echo "$nan_row" >>"$rows"
        return 0
    fi
    # shellcheck disable=SC2086
    vals=$(csv_get "$record" $fields)
    status=${vals##* }
    if [[ $status != ok ]]; then
        printf '  round %d %s status %s, left out\n' "$ROUND" "$label" "$status"
        echo "$nan_row" >>"$rows"
        return 0
    fi
    if [[ -n $extra_fn ]]; then
        echo "${vals% *} $("$extra_fn" "$record")" >>"$rows"
    else
        echo "${vals% *}" >>"$rows"
    fi
    printf '  round %d %s %s samples/s\n' "$ROUND" "${ok_label:-$label}" "${vals%% *}"
}

# The median samples/s of one `BINARY train OPTIONS... --quiet` run, from its summary line (the
# batch over the median step); nan where the run fails. Its stderr goes to $ERR where set.
train_throughput() { # binary train-options...
    local bin=$1 thr
    shift
    thr=$("$bin" train "$@" --quiet 2>>"${ERR:-/dev/null}" |
        sed -n 's/.* \([0-9.][0-9.]*\) samples\/s median.*/\1/p' | head -1) || thr=""
    echo "${thr:-nan}"
}

# The closing lines the benchmarks share: the load at the end (a warning where other processes
# competed for the cores), where the records are kept (keep 1) and where the output went.
bench_end() { # keep
    echo "uptime at the end: $(uptime)"
    high_load && echo "warning: load average $(load1) on $NCPU cores: figures are unreliable; rerun on a quiet machine"
    (($1)) && echo "records: $TMP"
    echo "this output: $LOG; stderr of the runs: $ERR"
}


# The opening every benchmark shares: out/NAME/ for the log (this script's stdout and stderr
# are copied there) and the runs' stderr, a scratch directory TMP (removed at exit unless
# keep is 1), the load, a Release build of mxbench in BUILD, and the lines that say what ran
# where. Sets OUT, TMP, STAMP, LOG, ERR, NCPU and MX.
bench_start() { # name keep
    OUT=out/$1
    mkdir -p "$OUT"
    TMP=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
    # shellcheck disable=SC2064 # TMP is fixed now
    (($2)) || trap "rm -rf '$TMP'" EXIT
    STAMP=$(date -u +%Y%m%dT%H%M%SZ)
    LOG=$OUT/$1-$STAMP.txt ERR=$OUT/stderr-$STAMP.log
    : >"$ERR"
    exec > >(tee "$LOG") 2>&1
    NCPU=$(nproc)
    echo "uptime: $(uptime)"
    high_load && echo "warning: load average $(load1) on $NCPU cores: other processes compete for the cores; rerun on a quiet machine"
    if ! { cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release && cmake --build "$BUILD" -j"$NCPU" --target mxbench; } >"$OUT/build.log" 2>&1; then
        echo "$1.sh: building mxbench failed; the log is $OUT/build.log:" >&2
        tail -20 "$OUT/build.log" >&2
        exit 1
    fi
    MX=$BUILD/harness/mxbench
    echo "mxbench: $MX ($(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ', with uncommitted changes'))"
    echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $NCPU cores; $STAMP"
}
