"""memagg-scheduler: the global manager (console script)."""
import sys

from memagg.conf import CONF
from memagg.scheduler import manager
from memagg import service


def main(argv=None):
    """Run memagg-scheduler until SIGTERM or SIGINT."""
    service.prepare_service(argv or sys.argv)
    server = service.Service(manager.BINARY, CONF.scheduler.topic,
                             manager.SchedulerManager())
    service.run([server])
    return 0


if __name__ == '__main__':
    sys.exit(main())
