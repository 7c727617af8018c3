"""memagg-compute: the local manager of a compute node (console script)."""
import sys

from memagg.compute import manager
from memagg.compute import rpcapi
from memagg import service


def main(argv=None):
    """Run memagg-compute until SIGTERM or SIGINT."""
    service.prepare_service(argv or sys.argv)
    server = service.Service(manager.BINARY, rpcapi.TOPIC,
                             manager.ComputeManager())
    service.run([server])
    return 0


if __name__ == '__main__':
    sys.exit(main())
