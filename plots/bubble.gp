# The pipeline bubble of model runs against device count (stages), one line per series (a
# schedule and micro-batch count): the measured idle share of each stage's step window, mean
# over stages (solid, filled markers), and the theory of equal stages, (k-1)/(m+k-1) for k
# stages and m micro-batches (dashed, open markers). Unequal stages or costly sends show as
# measured above theory.
# Input datafile (plot.c writes data/bubble.dat): one block per series, blocks separated by
# two blank lines, each opened by a line holding the series title in double quotes, then
#   1 devices   2 measured (fraction)   3 theory (fraction)   4 micro-batches
# Usage: gnuplot -e "set loadpath 'plots'" -e "datafile='bubble.dat'; outbase='out/bubble';
#        term='png'" [-e "title='...'; devname='...'; gpus='1 2 4'"] bubble.gp

if (!exists("nseries")) { stats datafile using 1 nooutput; nseries = STATS_blocks }
load 'style.gp'
if (exists("gpus")) { xvals = gpus }
load 'intaxis.gp'

set title "Pipeline bubble (solid: measured; dashed: (k-1)/(m+k-1))\n" . title
set xlabel 'number of ' . devname . ' (pipeline stages)'
set ylabel 'idle share of a step'
set yrange [0:100]
set format y '%.0f%%'

plot for [i=0:nseries-1] datafile index i using ($1*dodge(i)):($2*100) with linespoints lt i+1 dt dash(i) \
         title columnheader(1), \
     for [i=0:nseries-1] datafile index i using ($1*dodge(i)):($3*100) with linespoints lt i+1 dt 2 pt 6 notitle
