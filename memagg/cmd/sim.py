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

"""memagg-sim: the what-if simulator's console script.

The simulator (memagg.sim, its command line in memagg.sim.cli) needs numpy
and matplotlib. They come with memagg's ``sim`` extra
(``pip install 'memagg[sim]'``), not with memagg itself, so that compute
nodes do without them; without them memagg-sim says so in one line.
"""
import sys

from memagg.common import cli

PROG = 'memagg-sim'
#: What the sim extra installs (setup.cfg [extras] sim).
EXTRA_MODULES = ('numpy', 'matplotlib')
#: Exit status when the extra is missing (memagg-sim's "failed").
MISSING_EXTRA = 1


def main(argv=None):
    """Run memagg-sim (memagg.sim.cli.main), memagg-sim sweep
    (memagg.sim.sweep.main) when ``argv`` (default: the command line)
    starts with ``sweep``, or memagg-sim import (memagg.sim.trace_import)
    when it starts with ``import``, when the sim extra imports."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        # Imported here, not at the top: the import is what fails without
        # the extra, and the console script must answer that in one line.
        from memagg.sim import cli as sim_cli
        from memagg.sim import sweep
        from memagg.sim import trace_import
    except ImportError as error:
        if (error.name or '').split('.')[0] not in EXTRA_MODULES:
            raise
        return cli.fail(PROG, '%s is not installed; memagg-sim needs the '
                              'sim extra: pip install \'memagg[sim]\''
                        % error.name, MISSING_EXTRA)
    if argv[:1] == ['sweep']:
        return sweep.main(argv[1:])
    if argv[:1] == ['import']:
        return trace_import.main(argv[1:])
    return sim_cli.main(argv)


if __name__ == '__main__':
    sys.exit(main())
