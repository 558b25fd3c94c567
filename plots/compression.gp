# Gradient compression and mixed precision side by side: for each data-parallel run with a
# kvstore, the gradient bytes its pushes put on the wire per step, as sent (top, bars; the
# ratio to uncompressed f32 above each bar), and its final test accuracy with a 95% Wilson
# interval (bottom): what trading precision for bytes buys, and what it costs.
# Input datafile (plot.c writes data/compression.dat): one row per run,
#   1 index   2 "label"   3 wire MB per step   4 wire/raw ratio   5 test accuracy
#   6 low   7 high (95% Wilson interval on the test samples)   8 the run's family colour
#   (0xRRGGBB: its kvstore's, as in every figure)
# Usage: gnuplot -e "set loadpath 'plots'" -e "datafile='compression.dat'; outbase='out/compression';
#        term='png'" [-e "title='...'; nruns=6; hasacc=1"] compression.gp

if (!exists("nruns")) { stats datafile using 1 nooutput; nruns = STATS_records }
nseries = 1
load 'style.gp'

if (!exists("hasacc")) hasacc = 1
heading = "Gradient bytes on the wire per step" . (hasacc ? ", and accuracy," : "") . " per compression and precision"
# Without a test accuracy (runs of --steps) the bytes are the whole figure: an accuracy
# panel would have no point to draw, which gnuplot refuses.
if (hasacc) {
    set multiplot layout 2,1 title heading . "\n" . title
} else {
    set title heading . "\n" . title . ": no test accuracy (runs of --steps)"
}
set xrange [-0.6:nruns-0.4]
set xtics rotate by -30 left font ',9'
set bmargin 7
set style fill solid 0.6 border -1
set boxwidth 0.6
set grid ytics
set ylabel 'MB per step (as sent)'
set yrange [0:*]
set offsets 0, 0, graph 0.15, 0
plot datafile using 1:3:8:xtic(2) with boxes lc rgb variable notitle, \
     '' using 1:3:(sprintf('%.3g', $4)) with labels offset 0,0.7 font ',9' notitle
if (hasacc) {
    set ylabel 'final test accuracy'
    set yrange [*:*]
    set offsets 0, 0, graph 0.1, graph 0.1
    plot datafile using 1:5:6:7:8:xtic(2) with yerrorbars lc rgb variable pt 7 notitle
    unset multiplot
}
