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

"""memagg-compute: the local manager of a compute node (console script)."""
import sys

from memagg.common import exceptions
from memagg.compute import manager
from memagg.compute import rpcapi
from memagg import service


DESCRIPTION = """\
memagg-compute runs on each compute host: it estimates each VM's working
set, sets its balloon target, reclaims from the host side what a VM left
idle, takes remote-swap grants for it through memagg-swapd, and reports to
memagg-scheduler. It runs until SIGTERM or SIGINT."""


def main(argv=None):
    """Run memagg-compute until SIGTERM or SIGINT."""
    service.prepare_service(argv or sys.argv, description=DESCRIPTION)
    try:
        compute = manager.ComputeManager()
    except exceptions.Invalid as exc:
        sys.exit('memagg-compute: error: %s' % exc)
    server = service.Service(manager.BINARY, rpcapi.TOPIC, compute)
    service.run([server])
    return 0


if __name__ == '__main__':
    sys.exit(main())
