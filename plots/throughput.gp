# Throughput against device count: one line per series (runs that differ only in their
# device count), error bars at the 95% confidence interval of the median throughput; lines
# are nudged sideways by a few per cent so that coinciding error bars stay visible. Colours
# by family, and a panel per family when one key would be too long (style.gp).
# Input datafile (plot.c writes data/throughput.dat): one block per series, blocks separated
# by two blank lines, each opened by a line holding the series title in double quotes, then
#   1 devices   2 throughput (samples/s, median)   3 CI low   4 CI high   5 noisy (1: drawn hollow)
#   6 oversubscribed (1: crossed out)
# Usage: gnuplot -e "set loadpath 'plots'" -e "datafile='throughput.dat'; outbase='out/throughput';
#        term='png'" [-e "title='lenet on cpu'; devname='CPU workers'; gpus='1 2 4'"] throughput.gp

if (!exists("nseries")) { stats datafile using 1 nooutput; nseries = STATS_blocks }
load 'style.gp'
if (exists("gpus")) { xvals = gpus }
load 'intaxis.gp'

heading = "Throughput\n" . title
set xlabel 'number of ' . devname
set ylabel 'throughput (samples/s)'
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
if (npanels > 1) {
    # every panel on the whole figure's throughput axis, so that their heights compare
    stats datafile using 4 nooutput
    set yrange [0:STATS_max * 1.08]
    set multiplot layout prows, pcols title heading font ',13'
    set bmargin panel_bmargin
} else {
    set title heading
}

do for [p=1:npanels] {
    f = panel_first(p)
    l = panel_last(p)
    if (npanels > 1) { set title panel_title(p) }
    plot for [i=f:l] datafile index i using ($1*dodge(i)):2:3:4 \
         with yerrorlines lt i+1 dt dash(i) title columnheader(1), \
         for [i=f:l] datafile index i using ($1*dodge(i)):(noisy_at($2, $5)) \
         with points pt filled_pt(i+1) lc rgb 'white' notitle, \
         for [i=f:l] datafile index i using ($1*dodge(i)):(noisy_at($2, $5)) \
         with points pt hollow_pt(i+1) lt i+1 title (hasnoisy && i == f ? noisy_title : ''), \
         for [i=f:l] datafile index i using ($1*dodge(i)):(noisy_at($2, $6)) \
         with points pt 2 ps 2.2 lw 1.5 lc rgb '#000000' title (hasoversub && i == f ? oversub_title : '')
}
if (npanels > 1) { unset multiplot }
