# A log2 x axis for integer quantities (device counts, global batch sizes): labelled with
# exactly the values that ran, evenly spaced when they double. Reads xvals (space-separated
# ascending integers; optional: without it the range comes from column 1 of datafile and
# the tics are powers of two).

set logscale x 2
if (exists("xvals") && words(xvals) > 0) {
    tics_ = ''
    do for [v_ in xvals] {
        tics_ = tics_ . (strlen(tics_) ? ', ' : '') . '"' . v_ . '" ' . v_
    }
    eval 'set xtics (' . tics_ . ')'
    set xrange [real(word(xvals, 1)) / 1.35 : real(word(xvals, words(xvals))) * 1.35]
} else {
    stats datafile using 1 nooutput
    set xrange [STATS_min / 1.35 : STATS_max * 1.35]
    set xtics 2
}
