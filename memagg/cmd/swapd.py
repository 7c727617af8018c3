"""memagg-swapd: the remote-swap data path of a compute node.

Serves each local VM's remote-swap disk to QEMU over NBD, keeps its pages in
slabs on donor hosts, and lends this host's spare memory to other hosts.
The daemon is C (memagg._swapd, built from native/swapd); this module only
hands it the command line.  ``memagg-swapd --help`` lists the options.

Exit status: 0 stopped by SIGTERM/SIGINT, 1 failed, 2 bad option (one line
on stderr naming it).
"""
import sys

from memagg import _swapd


def main():
    """Run memagg-swapd with this process's command line."""
    sys.exit(_swapd.run(sys.argv))


if __name__ == '__main__':
    main()
