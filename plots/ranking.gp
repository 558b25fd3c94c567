# The answer drawn: for each workload a panel, in it for each device count a block of
# horizontal bars, the configurations fastest first (top). Bar length: throughput (samples/s;
# tokens/s for language models). Bar colour: the configuration's family (strategy, and for
# data parallelism its kvstore), the colour of its lines in every other figure. A row that
# missed the target (target, e.g. 'test accuracy >= 0.85') is hatched; the winner's bar is
# outlined in black and labelled.
# Input datafile (plot.c writes data/ranking.dat): one block per workload (a panel), blocks
# separated by two blank lines, each opened by the workload in double quotes, then rows of
#   1 kind (0: the heading of a device count, 1: a bar)   2 y (0 at the top, down by 1 a row)
#   3 value   4 reached (1 yes, 0 no, -1 no target)   5 winner (1)   6 colour (0xRRGGBB)
#   7 "label"   8 "text: the value at a bar's end, or the heading"
# Variables (plot_rank.c): npanels; per panel p: ptop<p>, pbot<p> (its plot area, screen
# fractions), pxmax<p>, prows<p>, punit<p>, pname<p> (the workload when several); nfam and
# famname<k>, famrgb<k>, famint<k> (its colour as a number) for the key and the hatched bars; target (the rule, '' for none); hatched (some row missed);
# maxlabel (the longest label, characters); keybottom (screen fraction), keyrows.
# Usage: gnuplot -e "set loadpath 'plots'" -e "datafile='ranking.dat'; outbase='out/ranking';
#        term='png'" -e "npanels=1; ptop1=0.85; pbot1=0.2; pxmax1=400; prows1=6; punit1='samples/s'; pname1=''; nfam=0; target=''; hatched=0; maxlabel=30; keybottom=0.01" ranking.gp

nseries = 1
load 'style.gp'
if (!exists("target")) target = ''
if (!exists("hatched")) hatched = 0
if (!exists("nfam")) nfam = 0
if (!exists("keybottom")) keybottom = 0.01
if (!exists("keyrows")) keyrows = 3

set multiplot title "Configurations ranked by throughput, fastest on top\n" . title font (term eq 'svg' ? ',15' : ',12')
unset title
set border 3
set ytics nomirror scale 0 font ',9'
set xtics nomirror
set grid xtics noytics ls 100
# the labels of the longest configuration stay on the canvas (a margin column is wider than
# an average character)
set lmargin int(maxlabel * 0.8) + 3
set rmargin 4
set style fill solid 0.85 noborder
bar(kind, reached) = kind == 1 && reached != 0
miss(kind, reached) = kind == 1 && reached == 0

do for [p=1:npanels] {
    set tmargin at screen value(sprintf('ptop%d', p))
    set bmargin at screen value(sprintf('pbot%d', p))
    # room right of the longest bar for its value and "winner"
    set xrange [0 : value(sprintf('pxmax%d', p)) * 1.22]
    set yrange [-value(sprintf('prows%d', p)) + 0.4 : 0.6]
    pname = value(sprintf('pname%d', p))
    set xlabel (strlen(pname) ? pname . ': ' : '') . 'throughput (' . value(sprintf('punit%d', p)) . ')' offset 0, 0.3
    if (p == npanels) {
        set key at screen 0.5, screen keybottom center bottom vertical maxrows keyrows Left reverse samplen 2 spacing 1.1 width 2 \
            opaque box lc rgb '#ffffff'
    } else {
        unset key
    }
    plot datafile index p-1 using (bar($1, $4) ? 0 : NaN):2:(0):3:($2-0.36):($2+0.36):6:ytic(7) \
             with boxxyerror fs solid 0.85 noborder lc rgb variable notitle, \
         for [k=1:nfam] '' index p-1 using (miss($1, $4) && $6 == value(sprintf('famint%d', k)) ? 0 : NaN):2:(0):3:($2-0.36):($2+0.36):ytic(7) \
             with boxxyerror fs pattern 6 border lc rgb '#' . value(sprintf('famrgb%d', k)) notitle, \
         '' index p-1 using ($5 == 1 ? 0 : NaN):2:(0):3:($2-0.36):($2+0.36) \
             with boxxyerror lc rgb '#000000' lw 1.8 fs empty notitle, \
         '' index p-1 using ($1 == 1 ? $3 : NaN):2:8 with labels left offset 0.6, 0 font ',9' notitle, \
         '' index p-1 using ($1 == 0 ? 0 : NaN):2:8 with labels left offset 0.3, 0 tc rgb '#333333' notitle, \
         for [k=1:nfam] NaN with boxes fs solid 0.85 lc rgb '#' . value(sprintf('famrgb%d', k)) \
             title value(sprintf('famname%d', k)), \
         NaN with boxes fs solid 0.85 lc rgb '#888888' title (strlen(target) ? 'filled: reached ' . target : ''), \
         NaN with boxes fs pattern 6 border lc rgb '#888888' \
             title (strlen(target) ? 'hatched: did not reach it' : '')
}
unset multiplot
