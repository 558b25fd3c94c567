# The second figure of `mxbench history`, instructions per step across revisions: history.gp
# itself, under this name so that the figure (history_instructions.png, .svg) sits beside the
# throughput one. The caller sets what='Instructions per step' and ylab; see history.gp.
load 'history.gp'
