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

"""memagg-scheduler: the global manager (console script)."""
import sys

from memagg.common import exceptions
from memagg.conf import CONF
from memagg.db import secret_box
from memagg.scheduler import manager
from memagg import service

#: RPC handlers memagg-scheduler runs at once unless [DEFAULT]
#: executor_thread_pool_size says otherwise. oslo.messaging's default of 64
#: threads contending for the GIL under a load of reports more than
#: doubled the CPU each report costs (doc/source/scaling.rst).
EXECUTOR_THREADS = 8


def set_defaults(conf):
    """memagg-scheduler's defaults of library options (a config file
    still overrides them)."""
    conf.set_default('executor_thread_pool_size', EXECUTOR_THREADS)


DESCRIPTION = """\
memagg-scheduler is the cloud's memory planner: it keeps the compute hosts'
reports, packs VMs by the memory they use in consolidation audits (live
migrations through Nova), and hands out remote-memory grants from the
hosts' reservoir. It runs until SIGTERM or SIGINT."""


def main(argv=None):
    """Run memagg-scheduler until SIGTERM or SIGINT."""
    set_defaults(CONF)
    service.prepare_service(argv or sys.argv, description=DESCRIPTION)
    try:
        # The key that wraps the grants' secrets: refused at start rather
        # than at the first grant.
        secret_box.current_key()
        scheduler = manager.SchedulerManager()
    except (exceptions.Invalid, secret_box.KeyFileError) as exc:
        sys.exit('memagg-scheduler: error: %s' % exc)
    server = service.Service(manager.BINARY, CONF.scheduler.topic,
                             scheduler)
    service.run([server])
    return 0


if __name__ == '__main__':
    sys.exit(main())
