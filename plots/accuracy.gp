# Final test accuracy per series (runs that differ only in their device count), against the
# global batch or the device count (xaxis, whichever gives the lines more points): how far an
# lr-scaling rule keeps accuracy as the batch grows, or whether splitting a step over more
# devices (strategy, kvstore, compressor, precision) costs accuracy at one global batch.
# Lines are nudged sideways by a few per cent so that coinciding error bars stay visible.
# Input datafile (plot.c writes data/accuracy.dat): one block per series, blocks separated by
# two blank lines, each opened by a line holding the series' title in double quotes, then
#   1 global batch (samples/step) or devices   2 test accuracy (fraction, mean over runs)
#   3 low   4 high (lowest/highest run, each widened by its 95% Wilson interval)   5 runs
# Usage: gnuplot -e "set loadpath 'plots'" -e "datafile='accuracy.dat'; outbase='out/accuracy';
#        term='png'" [-e "title='...'; xaxis='batch'; xvals='64 128 256'; batchnote='128'"] accuracy.gp

if (!exists("nseries")) { stats datafile using 1 nooutput; nseries = STATS_blocks }
if (!exists("xaxis")) { xaxis = 'batch' }
load 'style.gp'
load 'intaxis.gp'

if (xaxis eq 'devices') {
    set title "Test accuracy against device count" . (exists("batchnote") ? " (global batch " . batchnote . ")" : "") . "\n" . title
    set xlabel 'number of ' . devname
} else {
    set title "Test accuracy against global batch\n" . title
    set xlabel 'global batch size (samples per step)'
}
set ylabel 'final test accuracy (%)'
set offsets 0, 0, graph 0.1, graph 0.1
set format y '%.1f%%'

plot for [i=0:nseries-1] datafile index i using ($1*dodge(i)):($2*100):($3*100):($4*100) \
     with yerrorlines lt i+1 dt dash(i) title columnheader(1)
