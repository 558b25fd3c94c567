# Throughput against device count, measured and modelled (`mxbench project`): per configuration
# its measured points (filled: the model was fitted to them; hollow: held out, to check it) and
# the model's line (dashed), drawn past the counts measured.
# Input datafile (data/project.dat): two blocks per configuration, separated by two blank
# lines, each opened by its title in double quotes: block 2i the measured points, 2i+1 the
# model at the counts drawn, columns
#   1 devices   2 samples/s   3 scaling efficiency   4 fitted (1), held out (0), the model (-1)
# Usage: gnuplot -e "set loadpath 'plots'" -e "datafile='project.dat'; outbase='out/project_throughput';
#        term='png'; nseries=1" [-e "title='...'; devname='...'; gpus='1 2 4 8'"] project_throughput.gp

if (!exists("nseries")) { stats datafile using 1 nooutput; nseries = STATS_blocks / 2 }
load 'style.gp'
if (exists("gpus")) { xvals = gpus }
load 'intaxis.gp'

set title "Throughput, measured and modelled\n" . title
set xlabel 'number of ' . devname
set ylabel 'throughput (samples/s)'
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
fitted_at(y, f) = f > 0 ? y : NaN
held_at(y, f) = f == 0 ? y : NaN

plot for [i=0:nseries-1] datafile index 2*i+1 using 1:2 with lines lt i+1 dt (8,5) notitle, \
     for [i=0:nseries-1] datafile index 2*i using 1:(fitted_at($2, $4)) with points lt i+1 pt filled_pt(i+1) \
         title columnheader(1), \
     for [i=0:nseries-1] datafile index 2*i using 1:(held_at($2, $4)) with points lt i+1 pt hollow_pt(i+1) ps 1.6 \
         notitle, \
     NaN with lines lc rgb '#555555' dt (8,5) title 'dashed: the model', \
     NaN with points pt 6 ps 1.6 lc rgb '#555555' title 'hollow: measured, not fitted'
