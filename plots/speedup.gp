# Speedup against device count: one line per series, throughput relative to the same
# series at its fewest devices, with the ideal (linear) speedup as a dashed line. Log2 on
# both axes, so ideal scaling is the diagonal.
# Input datafile (plot.c writes data/scaling.dat): one block per series, blocks separated
# by two blank lines, each opened by a line holding the series title in double quotes, then
#   1 devices   2 speedup   3 scaling efficiency   4 noisy (1: drawn hollow)
# Usage: gnuplot -e "set loadpath 'plots'" -e "datafile='scaling.dat'; outbase='out/speedup';
#        term='png'" [-e "title='...'; devname='...'; gpus='1 2 4'; gbase=1"] speedup.gp
# gbase: the fewest devices in the study (the ideal line is devices/gbase).

if (!exists("nseries")) { stats datafile using 1 nooutput; nseries = STATS_blocks }
if (!exists("gbase")) { stats datafile using 1 nooutput; gbase = STATS_min }
load 'style.gp'
if (exists("gpus")) { xvals = gpus }
load 'intaxis.gp'

set title "Speedup\n" . title
set xlabel 'number of ' . devname
set ylabel 'speedup (x, relative to the fewest devices)'
set logscale y 2
set format y '%gx'
# No widening to whole powers of two, which would leave most of the height empty.
set autoscale yfix
set offsets 0, 0, graph 0.05, graph 0.05

plot x / gbase dt (8,6) lw 1.5 lc rgb '#888888' title 'ideal (linear)', \
     for [i=0:nseries-1] datafile index i using 1:2 with linespoints lt i+1 dt dash(i) title columnheader(1), \
     for [i=0:nseries-1] datafile index i using 1:(noisy_at($2, $4)) with points pt filled_pt(i+1) lc rgb 'white' notitle, \
     for [i=0:nseries-1] datafile index i using 1:(noisy_at($2, $4)) with points pt hollow_pt(i+1) lt i+1 \
         title (hasnoisy && i == 0 ? noisy_title : '')
