# Bytes moved per step against device count, one line per series: what each strategy sends
# between devices in a step. Layer parallelism: its all-gathers, reduce-scatters and
# all-reduces; model (pipeline): activations and their gradients between stages; data: the
# kvstore's pushes and pulls (dist_*: what worker 0 sent and received).
# Input datafile (plot.c writes data/moved.dat): one block per series, blocks separated by
# two blank lines, each opened by a line holding the series title in double quotes, then
#   1 devices   2 MB per step
# Usage: gnuplot -e "set loadpath 'plots'" -e "datafile='moved.dat'; outbase='out/moved';
#        term='png'" [-e "title='...'; devname='...'; gpus='1 2 4'"] moved.gp

if (!exists("nseries")) { stats datafile using 1 nooutput; nseries = STATS_blocks }
load 'style.gp'
if (exists("gpus")) { xvals = gpus }
load 'intaxis.gp'

set title "Bytes moved between devices per step\n" . title
set xlabel 'number of ' . devname
set ylabel 'MB per step'
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0

plot for [i=0:nseries-1] datafile index i using ($1*dodge(i)):2 with linespoints lt i+1 dt dash(i) \
         title columnheader(1)
