# Speedup against device count: one line per series, throughput relative to the same
# series on one device, with the ideal (linear) speedup as a dashed line. Log2 on both axes,
# so ideal scaling is the diagonal. A series without a one-device run has no speedup
# (results/SCHEMA.md, Scaling) and is not drawn. Colours by family, and a panel per family
# when one key would be too long (style.gp).
# Input datafile (plot.c writes data/scaling.dat): one block per series, blocks separated
# by two blank lines, each opened by a line holding the series title in double quotes, then
#   1 devices   2 speedup   3 scaling efficiency   4 noisy (1: drawn hollow)
#   5 oversubscribed (1: crossed out)
# Usage: gnuplot -e "set loadpath 'plots'" -e "datafile='scaling.dat'; outbase='out/speedup';
#        term='png'" [-e "title='...'; devname='...'; gpus='1 2 4'"] speedup.gp

if (!exists("nseries")) { stats datafile using 1 nooutput; nseries = STATS_blocks }
load 'style.gp'
if (exists("gpus")) { xvals = gpus }
load 'intaxis.gp'

heading = "Speedup\n" . title
set xlabel 'number of ' . devname
set ylabel 'speedup (x, relative to one device)'
set logscale y 2
set format y '%gx'
# No widening to whole powers of two, which would leave most of the height empty.
set autoscale yfix
set offsets 0, 0, graph 0.05, graph 0.05
if (npanels > 1) {
    # every panel on the whole figure's speedup axis, the ideal line's reach included
    stats datafile using 2 nooutput
    top_ = exists("gpus") && words(gpus) > 0 ? real(word(gpus, words(gpus))) : STATS_max
    set yrange [(STATS_min < 1 ? STATS_min : 1) / 1.15 : (STATS_max > top_ ? STATS_max : top_) * 1.15]
    set multiplot layout prows, pcols title heading font ',13'
    set bmargin panel_bmargin
} else {
    set title heading
}

do for [p=1:npanels] {
    f = panel_first(p)
    l = panel_last(p)
    if (npanels > 1) { set title panel_title(p) }
    plot x dt (8,6) lw 1.5 lc rgb '#888888' title 'ideal (linear)', \
         for [i=f:l] datafile index i using 1:2 with linespoints lt i+1 dt dash(i) title columnheader(1), \
         for [i=f:l] datafile index i using 1:(noisy_at($2, $4)) with points pt filled_pt(i+1) lc rgb 'white' notitle, \
         for [i=f:l] datafile index i using 1:(noisy_at($2, $4)) with points pt hollow_pt(i+1) lt i+1 \
             title (hasnoisy && i == f ? noisy_title : ''), \
         for [i=f:l] datafile index i using 1:(noisy_at($2, $5)) with points pt 2 ps 2.2 lw 1.5 lc rgb '#000000' \
             title (hasoversub && i == f ? oversub_title : '')
}
if (npanels > 1) { unset multiplot }
