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
    """Run memagg-sim (memagg.sim.cli.main) when the sim extra imports."""
    try:
        # Imported here, not at the top: the import is what fails without
        # the extra, and the console script must answer that in one line.
        from memagg.sim import cli as sim_cli
    except ImportError as error:
        if (error.name or '').split('.')[0] not in EXTRA_MODULES:
            raise
        return cli.fail(PROG, '%s is not installed; memagg-sim needs the '
                              'sim extra: pip install \'memagg[sim]\''
                        % error.name, MISSING_EXTRA)
    return sim_cli.main(argv)


if __name__ == '__main__':
    sys.exit(main())
