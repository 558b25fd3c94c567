# Memory per device against device count: one line per series (runs that differ only in
# their device count), the most one device held during a step (solid, filled markers) and
# what its parameters and their gradients take (dashed, open markers), as the allocator
# counted them. Data parallelism holds a whole replica on every device; a pipeline stage
# holds its layers; a layer-parallel shard its share of every layer.
# Input datafile (plot.c writes data/memory.dat): one block per series, blocks separated by
# two blank lines, each opened by a line holding the series title in double quotes, then
#   1 devices   2 peak MB   3 parameters and gradients MB
# Usage: gnuplot -e "set loadpath 'plots'" -e "datafile='memory.dat'; outbase='out/memory';
#        term='png'" [-e "title='...'; devname='...'; gpus='1 2 4'"] memory.gp

if (!exists("nseries")) { stats datafile using 1 nooutput; nseries = STATS_blocks }
load 'style.gp'
if (exists("gpus")) { xvals = gpus }
load 'intaxis.gp'

# The line styles are explained in the key, not the title: a long title is cut at the
# canvas' edges.
set title "Memory per device\n" . title
set xlabel 'number of ' . devname
set ylabel 'MB on the device holding most'
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0

plot for [i=0:nseries-1] datafile index i using ($1*dodge(i)):2 with linespoints lt i+1 dt dash(i) \
         title columnheader(1), \
     for [i=0:nseries-1] datafile index i using ($1*dodge(i)):3 with linespoints lt i+1 dt 2 pt 6 notitle, \
     NaN with linespoints lw 2 dt 1 pt 7 lc rgb '#555555' title 'solid, filled: peak during a step', \
     NaN with linespoints lw 2 dt 2 pt 6 lc rgb '#555555' title 'dashed, open: parameters and gradients'
