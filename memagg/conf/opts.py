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

"""Entry points for oslo-config-generator: every memagg option, by group."""
from memagg.conf import api
from memagg.conf import compute
from memagg.conf import consolidation
from memagg.conf import coordination
from memagg.conf import database
from memagg.conf import default
from memagg.conf import host_reclaim
from memagg.conf import local_policy
from memagg.conf import messaging
from memagg.conf import nova
from memagg.conf import placement
from memagg.conf import reservoir
from memagg.conf import scheduler
from memagg.conf import swapd
from memagg.conf import wss

_MODULES = (default, api, compute, database, scheduler, consolidation,
            coordination, wss, local_policy, nova, placement, reservoir,
            swapd, host_reclaim)


def list_opts():
    """Return [(group, [opts])] for the sample config generator."""
    result = []
    for module in _MODULES:
        result.extend(module.list_opts().items())
    return result


def set_lib_defaults():
    """Apply memagg's defaults to library options (oslo.db,
    oslo.messaging)."""
    database.set_lib_defaults()
    messaging.set_lib_defaults()
