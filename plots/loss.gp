# Training loss per step, one line per run (its first repeat): the moving average over
# `smooth` steps in bold over the raw loss, faint (raw drawn only for a few runs).
# Input datafile (plot.c writes data/loss.dat): one block per run, blocks separated by two
# blank lines, each opened by a line holding the run's title in double quotes, then
#   1 step   2 training loss   3 moving average of the loss (centred, `smooth` steps)
# Usage: gnuplot -e "set loadpath 'plots'" -e "datafile='loss.dat'; outbase='out/loss';
#        term='png'" [-e "title='...'; smooth=25"] loss.gp

if (!exists("nseries")) { stats datafile using 1 nooutput; nseries = STATS_blocks }
if (!exists("smooth")) { smooth = 1 }
load 'style.gp'

set title (smooth > 1 ? sprintf("Training loss (moving average of %d steps)\n", smooth) : "Training loss\n") . title
set xlabel 'training step'
set ylabel 'training loss'
set xrange [0:*]
set offsets 0, 0, graph 0.05, 0

raw = smooth > 1 && nseries <= 6
plot for [i=0:(raw ? nseries-1 : -1)] datafile index i using 1:2 with lines lw 1 lc rgb faint(i+1) notitle, \
     for [i=0:nseries-1] datafile index i using 1:3 with lines lt i+1 dt dash(i) lw 2 title columnheader(1)
