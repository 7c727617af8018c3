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

"""Options of the [scheduler] group: memagg-scheduler, the global manager."""
from oslo_config import cfg

GROUP = cfg.OptGroup('scheduler', title='memagg-scheduler options')

opts = [
    cfg.StrOpt('topic', default='memagg-scheduler',
               help='RPC topic memagg-scheduler listens on.'),
    cfg.IntOpt('purge_interval', default=3600, min=60,
               help='Seconds between two purges of WSS and host samples '
                    'older than [wss] sample_retention_hours.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
