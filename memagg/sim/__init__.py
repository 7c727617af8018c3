# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""memagg-sim, the trace-driven what-if simulator: cli (its command line,
run by the console script memagg.cmd.sim) and sweep (memagg-sim sweep's),
arguments (the arguments both take), config (memagg's options resolved
into what a simulation runs with), inputs, trace (CSV input) and synthetic
(generated input), maxavg (WSS max-average of every VM and step), engine
(the virtual-time loop through the consolidation round planner),
reservoir and host_reclaim (their models), runner (bases side by side),
report (summary.json), plots (PNGs) and progress (the bar on stderr). It
needs numpy and matplotlib, memagg's sim extra (pip install
'memagg[sim]'). May import conf, common, drivers and the scheduler's
consolidation planner."""
