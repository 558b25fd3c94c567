# fp16 mixed precision's dynamic loss scale per step, one line per run (its first repeat), on
# a log2 axis: it starts at 2^16, halves at each step whose gradients overflowed (marked with
# a cross: that step was skipped on every device) and doubles after 2000 clean steps.
# Input datafile (plot.c writes data/loss_scale.dat): one block per run, blocks separated by
# two blank lines, each opened by a line holding the run's title in double quotes, then
#   1 step   2 loss scale   3 the scale at a skipped step (NaN elsewhere)
# Usage: gnuplot -e "set loadpath 'plots'" -e "datafile='loss_scale.dat'; outbase='out/loss_scale';
#        term='png'" [-e "title='...'; nseries=2"] loss_scale.gp

if (!exists("nseries")) { stats datafile using 1 nooutput; nseries = STATS_blocks }
load 'style.gp'

set title "fp16 loss scale per step (x: a skipped step)\n" . title
set xlabel 'training step'
set ylabel 'loss scale'
set logscale y 2
set format y '%.0f'
set xrange [0:*]
set offsets 0, 0, graph 0.1, graph 0.1

plot for [i=0:nseries-1] datafile index i using 1:2 with steps lt i+1 dt dash(i) lw 2 title columnheader(1), \
     for [i=0:nseries-1] datafile index i using 1:3 with points lt i+1 pt 2 ps 1.5 notitle
