# Shared look of every mxbench plot, loaded by plots/*.gp once their variables are set.
# Variables read: term ('png' -> pngcairo, 'svg'), outbase (output path without the
# extension), width and height (pixels), title (workload(s) and device type), devname,
# nseries (lines in the key), keycols (columns of the key).

if (!exists("term")) term = 'png'
if (!exists("outbase")) outbase = 'plot'
if (!exists("width")) width = 900
if (!exists("height")) height = 560
if (!exists("title")) title = ''
if (!exists("devname")) devname = 'devices'

# noenhanced everywhere: run labels such as "dist_sync" must not turn '_' into a subscript.
if (term eq 'svg') {
    set terminal svg size width,height dynamic noenhanced font 'DejaVu Sans,12' linewidth 1.2 background rgb 'white'
    set output outbase.'.svg'
    set title font ',15'
} else {
    set terminal pngcairo size width,height noenhanced font 'DejaVu Sans,10' linewidth 1.2 background rgb 'white'
    set output outbase.'.png'
    set title font ',12'
}

# Okabe-Ito colours (readable by colour-blind readers and in grey print), one marker each.
colors = '0072B2 D55E00 009E73 CC79A7 E69F00 56B4E9 000000 8C6D1F'
color(i) = '#' . word(colors, (int(i) - 1) % 8 + 1)
faint(i) = '#A0' . word(colors, (int(i) - 1) % 8 + 1)
set linetype 1 lc rgb color(1) lw 2 pt 7  ps 1.1
set linetype 2 lc rgb color(2) lw 2 pt 5  ps 1.0
set linetype 3 lc rgb color(3) lw 2 pt 9  ps 1.4
set linetype 4 lc rgb color(4) lw 2 pt 11 ps 1.4
set linetype 5 lc rgb color(5) lw 2 pt 13 ps 1.3
set linetype 6 lc rgb color(6) lw 2 pt 15 ps 1.3
set linetype 7 lc rgb color(7) lw 2 pt 4  ps 1.0
set linetype 8 lc rgb color(8) lw 2 pt 6  ps 1.1
set linetype cycle 8
# Colours fixed per family: plot.c passes each line's colour (lcolors: its strategy and, for
# data parallelism, its kvstore; the table is plots/plot_family.c) and its rank among the
# lines of its family before it (lvariants), which picks its dash pattern and marker. So
# data-parallel with kvstore device is the same blue in every figure, and its fp16 and 2bit
# variants are that blue dashed and dotted. Without them (a figure drawn by hand), line i
# takes colour i and past eight lines changes its dash pattern.
# lvar(i): the variant of line i (from 1).
lvar(i) = exists("lvariants") ? int(word(lvariants, int(i))) : int(i) - 1
dash(i) = exists("lvariants") ? lvar(int(i) + 1) % 5 + 1 : int(i) / 8 + 1
# A run on a busy host (its data file's noisy column 1) is drawn hollow: its line type's
# marker in white, then the outline of that marker (the outline types of 7 5 9 11 13 15).
filled_pt(i) = int(word('7 5 9 11 13 15 4 6', lvar(i) % 8 + 1))
hollow_pt(i) = int(word('6 4 8 10 12 14 4 6', lvar(i) % 8 + 1))
if (exists("lcolors") && words(lcolors) > 0) {
    if (words(lcolors) > 8) { set linetype cycle words(lcolors) }
    do for [i_=1:words(lcolors)] {
        set linetype i_ lc rgb '#' . word(lcolors, i_) lw 2 pt filled_pt(i_) ps 1.2
    }
}
noisy_at(y, n) = n > 0 ? y : NaN
if (!exists("hasnoisy")) hasnoisy = 0
noisy_title = 'hollow: host busy (noisy)'
# A run with more devices x threads than cores (its data file's oversubscribed column 1) is
# crossed out: its timings measure the cores taking turns, not the strategy.
if (!exists("hasoversub")) hasoversub = 0
oversub_title = 'crossed: oversubscribed (devices x threads > cores)'

set border 3 lw 1 lc rgb '#555555'
set tics nomirror out scale 0.6 textcolor rgb '#222222'
set style line 100 lc rgb '#dddddd' lw 1 dt solid
set grid xtics ytics ls 100, ls 100
set errorbars 1.5
# Shifts line i (from 0) sideways on a log2 x axis so that error bars at the same x do not
# hide one another: a few per cent each, at most 10% either way in all, far less than the
# gap between tics.
dodge(i) = 2 ** ((nseries > 8 ? 0.2 / nseries : 0.025) * (i - (nseries - 1) / 2.0))

# The key never covers data and never takes the plot's width: below the x label, in keycols
# columns (plot.c sizes the canvas for its rows).
if (!exists("keycols")) keycols = 3
set key below center horizontal Left reverse maxcols keycols maxrows 1000 samplen 2.5 spacing 1.1 width 1

# Panels (throughput, speedup, efficiency): plot.c passes npanels > 1 when one key would be
# too long, with the first and last line of each panel (pfirst, plast: lines of one family
# are adjacent) and its title (ptitle1, ...); the scripts draw pcols x prows panels on the
# same axes ranges so that they compare.
if (!exists("npanels")) npanels = 1
panel_first(p) = npanels > 1 ? int(word(pfirst, p)) : 0
panel_last(p) = npanels > 1 ? int(word(plast, p)) : nseries - 1
panel_title(p) = npanels > 1 ? value(sprintf('ptitle%d', p)) : ''
# Every panel keeps room below for the longest panel key (pkeyrows entries), so that their
# plots are the same height.
panel_bmargin = exists("pkeyrows") ? pkeyrows * 1.15 + 4 : 6
