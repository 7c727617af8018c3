"""memagg-sim, the trace-driven what-if simulator: cli (its command line,
run by the console script memagg.cmd.sim), trace (CSV input), synthetic
(generated input), maxavg (WSS max-average of every VM and step), engine
(the virtual-time loop through the consolidation round planner), runner
(bases side by side), report (summary.json), plots (PNGs) and progress
(the bar on stderr). It needs numpy and matplotlib, memagg's sim extra
(pip install 'memagg[sim]')."""
