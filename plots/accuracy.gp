# Final test accuracy against global batch size, one line per learning-rate scaling rule
# (none, linear, sqrt): shows how far a rule keeps accuracy as the batch grows. Lines are
# nudged sideways by a few per cent so that coinciding error bars stay visible.
# Input datafile (plot.c writes data/accuracy.dat): one block per rule, blocks separated by
# two blank lines, each opened by a line holding the rule's title in double quotes, then
#   1 global batch (samples/step)   2 test accuracy (fraction, mean over runs)
#   3 low   4 high (lowest/highest run, each widened by its 95% Wilson interval)   5 runs
# Usage: gnuplot -e "set loadpath 'plots'" -e "datafile='accuracy.dat'; outbase='out/accuracy';
#        term='png'" [-e "title='...'; batches='64 128 256'"] accuracy.gp

if (!exists("nseries")) { stats datafile using 1 nooutput; nseries = STATS_blocks }
load 'style.gp'
if (exists("batches")) { xvals = batches }
load 'intaxis.gp'

set title "Test accuracy against global batch\n" . title
set xlabel 'global batch size (samples per step)'
set ylabel 'final test accuracy (%)'
set offsets 0, 0, graph 0.1, graph 0.1
set format y '%.1f%%'

plot for [i=0:nseries-1] datafile index i using ($1*dodge(i)):($2*100):($3*100):($4*100) \
     with yerrorlines lt i+1 dt dash(i) title columnheader(1)
