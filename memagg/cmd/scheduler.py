"""memagg-scheduler: the global manager (console script)."""
import sys

from memagg.common import exceptions
from memagg.conf import CONF
from memagg.scheduler import manager
from memagg import service


def main(argv=None):
    """Run memagg-scheduler until SIGTERM or SIGINT."""
    service.prepare_service(argv or sys.argv)
    try:
        scheduler = manager.SchedulerManager()
    except exceptions.Invalid as exc:
        sys.exit('memagg-scheduler: error: %s' % exc)
    server = service.Service(manager.BINARY, CONF.scheduler.topic,
                             scheduler)
    service.run([server])
    return 0


if __name__ == '__main__':
    sys.exit(main())
