# Scaling efficiency against device count: speedup over one device divided by the device
# count (1.0 = perfect linear scaling, drawn dashed), one line per series; a series without
# a one-device run has none and is not drawn. Colours by family, and a panel per family when
# one key would be too long (style.gp); every panel on the same axes.
# Input datafile (plot.c writes data/scaling.dat): one block per series, blocks separated
# by two blank lines, each opened by a line holding the series title in double quotes, then
#   1 devices   2 speedup   3 scaling efficiency   4 noisy (1: drawn hollow)
#   5 oversubscribed (1: crossed out)
# Usage: gnuplot -e "set loadpath 'plots'" -e "datafile='scaling.dat'; outbase='out/efficiency';
#        term='png'" [-e "title='...'; devname='...'; gpus='1 2 4'"] efficiency.gp

if (!exists("nseries")) { stats datafile using 1 nooutput; nseries = STATS_blocks }
stats datafile using 3 nooutput
ytop = STATS_max > 1.05 ? STATS_max * 1.1 : 1.15
load 'style.gp'
if (exists("gpus")) { xvals = gpus }
load 'intaxis.gp'

heading = "Scaling efficiency\n" . title
set xlabel 'number of ' . devname
set ylabel 'scaling efficiency (speedup / device ratio)'
set yrange [0:ytop]
set ytics 0.1
set format y '%.1f'
if (npanels > 1) {
    set multiplot layout prows, pcols title heading font ',13'
    set bmargin panel_bmargin
} else {
    set title heading
}

do for [p=1:npanels] {
    f = panel_first(p)
    l = panel_last(p)
    if (npanels > 1) { set title panel_title(p) }
    plot 1 dt (8,6) lw 1.5 lc rgb '#888888' title 'ideal (1.0)', \
         for [i=f:l] datafile index i using 1:3 with linespoints lt i+1 dt dash(i) title columnheader(1), \
         for [i=f:l] datafile index i using 1:(noisy_at($3, $4)) with points pt filled_pt(i+1) lc rgb 'white' notitle, \
         for [i=f:l] datafile index i using 1:(noisy_at($3, $4)) with points pt hollow_pt(i+1) lt i+1 \
             title (hasnoisy && i == f ? noisy_title : ''), \
         for [i=f:l] datafile index i using 1:(noisy_at($3, $5)) with points pt 2 ps 2.2 lw 1.5 lc rgb '#000000' \
             title (hasoversub && i == f ? oversub_title : '')
}
if (npanels > 1) { unset multiplot }
