# Phase breakdown of a training step, one stacked bar per run: median time per step spent
# in each phase (data loading, forward, backward, communication, the optimizer update, gradient
# compression: metrics.def's order); a marker shows the median of the whole step (medians of
# the parts need not add up to it).
# Input datafile (plot.c writes data/breakdown.dat): one row per run:
#   1 run label (quoted)   2 .. stepcol-1: one column per phase, named by `phases`
#   stepcol: whole step   (all in seconds, medians over the timed steps)
#   stepcol+1: the run's family colour (0xRRGGBB), drawn as a strip under its bar
# plot.c passes phases and stepcol from the table that writes the file, so the two cannot
# drift apart; the defaults below are only for drawing an old data file by hand.
# Usage: gnuplot -e "set loadpath 'plots'" -e "datafile='breakdown.dat'; outbase='out/breakdown';
#        term='png'" [-e "title='...'; nbars=6; maxlabel=30; phases='data forward ...'; stepcol=8"] breakdown.gp
# maxlabel: the longest run label in characters (slanted labels need that much left margin).

if (!exists("phases")) { phases = 'data forward backward comm update compress' }
if (!exists("stepcol")) { stepcol = words(phases) + 2 }
stats datafile using stepcol nooutput
if (!exists("nbars")) { nbars = STATS_records }
# Seconds, milliseconds or microseconds, whichever keeps the tic labels short.
yscale = STATS_max >= 1 ? 1 : (STATS_max >= 1e-3 ? 1e3 : 1e6)
yunit = yscale == 1 ? 's' : (yscale == 1e3 ? 'ms' : 'us')
nseries = words(phases)
load 'style.gp'

set title "Step time by phase\n" . title
set ylabel 'median time per step (' . yunit . ')'
# Under each bar a strip in its run's family colour (strategy and kvstore, as its line in
# every other figure; column stepcol+1), below the zero line so that it hides no phase.
strip = STATS_max * yscale * 0.035
set yrange [-strip * 1.15 : *]
set offsets 0, 0, graph 0.08, 0
# Key on the right, top entry first as in the stack; below the plot it would compete with
# the slanted run labels for height.
set key outside right top vertical invert Left reverse samplen 2 spacing 1.2
# gnuplot's automatic margin would leave a wide gap here (it reserves room for the slanted labels)
set rmargin 20
set style data histograms
set style histogram rowstacked
set style fill solid 0.9 border rgb '#ffffff'
set boxwidth 0.7 relative
set grid noxtics
set xtics scale 0
if (!exists("maxlabel")) { maxlabel = 30 }
# Slant the labels when they would not fit side by side (about 7 px per character); the
# first one then reaches left of the plot, so the left margin grows with it.
if (maxlabel + 2 > (width / 7.0) / nbars) {
    set xtics rotate by 30 right
    lm = int(maxlabel * 0.62) - 2
    if (lm > 10) { set lmargin lm }
    # A slanted label is about 0.25 line heights tall per character; gnuplot's own estimate
    # is far too generous on the svg terminal.
    set bmargin int(maxlabel * 0.25) + 2
}
# A lone bar would fill the plot: keep room for at least three.
pad = nbars < 3 ? (3 - nbars) / 2.0 : 0
set xrange [-0.6 - pad : nbars - 0.4 + pad]

plot for [c=2:stepcol-1] datafile using (column(c)*yscale):xtic(1) lt c-1 title word(phases, c-1), \
     datafile using 0:(column(stepcol)*yscale) with points pt 2 ps 1.6 lw 2 lc rgb '#000000' title 'whole step', \
     datafile using 0:(-strip/2):($0-0.35):($0+0.35):(-strip):(-strip*0.15):(column(stepcol+1)) \
         with boxxyerror fs solid 1 noborder lc rgb variable notitle, \
     NaN with boxes fs solid 1 noborder lc rgb '#7F7F7F' title 'strip: strategy/kv'
