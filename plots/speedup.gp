# Speedup against device count: one line per series, throughput relative to the same
# series on one device, with the ideal (linear) speedup as a dashed line. Log2 on both axes,
# so ideal scaling is the diagonal. A series without a one-device run has no speedup
# (results/SCHEMA.md, Scaling) and is not drawn.
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

set title "Speedup\n" . title
set xlabel 'number of ' . devname
set ylabel 'speedup (x, relative to one device)'
set logscale y 2
set format y '%gx'
# No widening to whole powers of two, which would leave most of the height empty.
set autoscale yfix
set offsets 0, 0, graph 0.05, graph 0.05

plot x dt (8,6) lw 1.5 lc rgb '#888888' title 'ideal (linear)', \
     for [i=0:nseries-1] datafile index i using 1:2 with linespoints lt i+1 dt dash(i) title columnheader(1), \
     for [i=0:nseries-1] datafile index i using 1:(noisy_at($2, $4)) with points pt filled_pt(i+1) lc rgb 'white' notitle, \
     for [i=0:nseries-1] datafile index i using 1:(noisy_at($2, $4)) with points pt hollow_pt(i+1) lt i+1 \
         title (hasnoisy && i == 0 ? noisy_title : ''), \
     for [i=0:nseries-1] datafile index i using 1:(noisy_at($2, $5)) with points pt 2 ps 2.2 lw 1.5 lc rgb '#000000' \
         title (hasoversub && i == 0 ? oversub_title : '')
