"""memagg-compute: the local manager of a compute node (console script)."""
import sys

from memagg.common import exceptions
from memagg.compute import manager
from memagg.compute import rpcapi
from memagg import service


def main(argv=None):
    """Run memagg-compute until SIGTERM or SIGINT."""
    service.prepare_service(argv or sys.argv)
    try:
        compute = manager.ComputeManager()
    except exceptions.Invalid as exc:
        sys.exit('memagg-compute: error: %s' % exc)
    server = service.Service(manager.BINARY, rpcapi.TOPIC, compute)
    service.run([server])
    return 0


if __name__ == '__main__':
    sys.exit(main())
