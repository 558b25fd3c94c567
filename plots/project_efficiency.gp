# Scaling efficiency against device count, measured and modelled (`mxbench project`):
# throughput over (devices / the smallest fitted count) x the throughput there, 1.0 = perfect
# linear scaling (drawn dashed grey); per configuration its measured points (filled: fitted,
# hollow: held out) and the model's line (dashed), drawn past the counts measured.
# Input datafile (data/project.dat): as project_throughput.gp; column 3 is the efficiency
#   1 devices   2 samples/s   3 scaling efficiency   4 fitted (1), held out (0), the model (-1)
# Usage: gnuplot -e "set loadpath 'plots'" -e "datafile='project.dat'; outbase='out/project_efficiency';
#        term='png'; nseries=1" [-e "title='...'; devname='...'; gpus='1 2 4 8'; ytop=1.2"] project_efficiency.gp

if (!exists("nseries")) { stats datafile using 1 nooutput; nseries = STATS_blocks / 2 }
if (!exists("ytop")) ytop = 1.15
load 'style.gp'
if (exists("gpus")) { xvals = gpus }
load 'intaxis.gp'

set title "Scaling efficiency, measured and modelled\n" . title
set xlabel 'number of ' . devname
set ylabel 'scaling efficiency (speedup / device ratio)'
set yrange [0:ytop]
set ytics 0.1
set format y '%.1f'
fitted_at(y, f) = f > 0 ? y : NaN
held_at(y, f) = f == 0 ? y : NaN

plot 1 dt (4,4) lw 1.5 lc rgb '#888888' title 'ideal (1.0)', \
     for [i=0:nseries-1] datafile index 2*i+1 using 1:3 with lines lt i+1 dt (8,5) notitle, \
     for [i=0:nseries-1] datafile index 2*i using 1:(fitted_at($3, $4)) with points lt i+1 pt filled_pt(i+1) \
         title columnheader(1), \
     for [i=0:nseries-1] datafile index 2*i using 1:(held_at($3, $4)) with points lt i+1 pt hollow_pt(i+1) ps 1.6 \
         notitle, \
     NaN with lines lc rgb '#555555' dt (8,5) title 'dashed: the model', \
     NaN with points pt 6 ps 1.6 lc rgb '#555555' title 'hollow: measured, not fitted'
