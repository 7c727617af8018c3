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

"""memagg configuration: one module per option group, registered here.

Every process does ``from memagg import conf; CONF = conf.CONF``.

CONF is memagg's own ConfigOpts, not oslo.config's global ``cfg.CONF``:
memagg's Nova filter runs inside nova-scheduler, and memagg's tests run a
real Nova in process, where Nova owns the global object and some of its
option names (``[DEFAULT] host``, ``[api] max_limit``) differ from memagg's.
"""
from oslo_config import cfg

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

CONF = cfg.ConfigOpts()

for _module in (default, api, compute, database, messaging, scheduler,
                consolidation, coordination, wss, local_policy, nova,
                placement, reservoir, swapd, host_reclaim):
    _module.register_opts(CONF)
