# A log2 x axis for integer quantities (device counts, global batch sizes): labelled with
# exactly the values that ran, evenly spaced when they double. Reads xvals (space-separated
# ascending integers; optional: without it gnuplot picks powers of two).

set logscale x 2
if (exists("xvals") && words(xvals) > 0) {
    tics_ = ''
    do for [v_ in xvals] {
        tics_ = tics_ . (strlen(tics_) ? ', ' : '') . '"' . v_ . '" ' . v_
    }
    eval 'set xtics (' . tics_ . ')'
    set xrange [real(word(xvals, 1)) / 1.35 : real(word(xvals, words(xvals))) * 1.35]
} else {
    set xtics 2
    set offsets graph 0.05, graph 0.05, 0, 0
}
