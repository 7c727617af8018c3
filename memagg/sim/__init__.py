"""memagg-sim, the trace-driven what-if simulator (memagg.cmd.sim is its
command line): trace (CSV input), synthetic (generated input), maxavg (WSS
max-average of every VM and step), engine (the virtual-time loop through
the consolidation round planner), runner (bases side by side), report
(summary.json), plots (PNGs) and progress (the bar on stderr)."""
