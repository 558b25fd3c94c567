# A metric across revisions (`mxbench history`): one line per configuration, the revisions in
# the order they were measured along x, error bars at the 95% interval (throughput; counts have
# none), and each point judged against the configuration's previous one: a regression ringed
# in red, an improvement in green. A configuration missing from a file breaks its line there.
# Input datafile (data/history.dat, data/history_instructions.dat): one block per configuration,
# blocks separated by two blank lines, each opened by its title in double quotes, then
#   1 revision index (0 = oldest)   2 value   3 interval low   4 interval high
#   5 verdict against the previous point: 0 same, 1 unsure (~), 2 regression, 3 improvement,
#     4 none (the first point, or not measured on one side)   6 revision label
# Usage: gnuplot -e "set loadpath 'plots'" -e "datafile='history.dat'; outbase='out/history';
#        term='png'; revs='a1b2c3 d4e5f6 ...'" [-e "title='...'; what='Throughput';
#        ylab='throughput (samples/s)'; nreg=1; nimp=0; logy=0; si=0"] history.gp

if (!exists("nseries")) { stats datafile using 1 nooutput; nseries = STATS_blocks }
load 'style.gp'
if (!exists("what")) what = 'Throughput'
if (!exists("ylab")) ylab = 'throughput (samples/s)'
if (!exists("nreg")) nreg = 0
if (!exists("nimp")) nimp = 0
if (!exists("logy")) logy = 0
if (!exists("si")) si = 0

# x: the revisions by index, labelled with their names, rotated so that a dozen fit
nrevs = words(revs)
set xrange [-0.5 : nrevs - 0.5]
set xtics rotate by 40 right nomirror
set xtics ()
do for [k = 1:nrevs] { set xtics add (word(revs, k) k - 1) }
set grid noxtics ytics ls 100
# no x label: the rotated revisions say what the axis is, and a label there would meet the key
set ylabel ylab
if (si) { set format y '%.0s%c' }  # counts in the tens of millions: 20M, not 2e+07
if (logy) { set logscale y } else { set yrange [0:*] }
set offsets 0, 0, graph 0.10, 0
set title what . " across revisions, oldest first\n" . title

# lines side by side at a revision, so that their error bars do not hide one another
shift(i) = nseries > 1 ? (i - (nseries - 1) / 2.0) * (0.3 / nseries) : 0
mark_at(y, v, want) = v == want ? y : NaN
red = '#D00000'
green = '#00A030'

plot for [i=0:nseries-1] datafile index i using ($1 + shift(i)):2:3:4 \
     with yerrorlines lt i+1 dt dash(i) title columnheader(1), \
     for [i=0:nseries-1] datafile index i using ($1 + shift(i)):(mark_at($2, $5, 2)) \
     with points pt 6 ps 2.6 lw 2.5 lc rgb red title (nreg > 0 && i == 0 ? 'regression (vs. previous point)' : ''), \
     for [i=0:nseries-1] datafile index i using ($1 + shift(i)):(mark_at($2, $5, 3)) \
     with points pt 6 ps 2.6 lw 2.5 lc rgb green title (nimp > 0 && i == 0 ? 'improvement' : '')
