# Staleness of dist_async against device count: one line per series (runs that differ only
# in their device count), the mean staleness of a push with a bar from its median to its
# 99th percentile, and the largest as an open marker of the same colour. The staleness of a
# push is the number of updates its key received between the pusher's last pull of it and
# the push (0: synchronous).
# Input datafile (plot.c writes data/staleness.dat): one block per series, blocks separated
# by two blank lines, each opened by a line holding the series title in double quotes, then
#   1 devices   2 mean   3 median   4 99th percentile   5 max   (updates)
# Usage: gnuplot -e "set loadpath 'plots'" -e "datafile='staleness.dat'; outbase='out/staleness';
#        term='png'" [-e "title='...'; devname='...'; gpus='1 2 4'"] staleness.gp

if (!exists("nseries")) { stats datafile using 1 nooutput; nseries = STATS_blocks }
load 'style.gp'
if (exists("gpus")) { xvals = gpus }
load 'intaxis.gp'

set title "Staleness of asynchronous updates (line: mean, bar: median to p99, open marker: max)\n" . title
set xlabel 'number of ' . devname
set ylabel 'staleness (updates between pull and push)'
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0

plot for [i=0:nseries-1] datafile index i using ($1*dodge(i)):2:3:4 \
         with yerrorlines lt i+1 dt dash(i) title columnheader(1), \
     for [i=0:nseries-1] datafile index i using ($1*dodge(i)):5 with points lt i+1 pt 6 ps 1.4 notitle
