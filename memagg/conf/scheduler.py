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

"""Options of the [scheduler] group (memagg-scheduler, the global manager)
and of [upgrade_levels] (the RPC versions a service may send it)."""
from oslo_config import cfg

# The modes of [compute] mode too: memagg-compute and memagg-scheduler are
# switched to observing the same way.
from memagg.conf.compute import MANAGE, OBSERVE

GROUP = cfg.OptGroup('scheduler', title='memagg-scheduler options')
UPGRADE_GROUP = cfg.OptGroup(
    'upgrade_levels', title='RPC version pins for rolling upgrades')

opts = [
    cfg.StrOpt('mode', default=MANAGE,
               choices=[(MANAGE, 'Plan audits, execute their plans and '
                                 'grant remote memory'),
                        (OBSERVE, 'Plan and store audits only: execute '
                                  'nothing, grant nothing')],
               help='What memagg-scheduler does with its consolidation '
                    'rounds and the global reservoir. manage: audits are '
                    'planned and executed (on request, or at once with '
                    'auto_execute) and grants are made. observe: audits '
                    'are planned and stored as in manage mode, and stay '
                    'recommended (the API shows their plans), but none is '
                    'executed, auto_execute included; the API (which '
                    'reads this option too) answers 409 to executing an '
                    'audit, requesting a migration or a grant, and the '
                    'scheduler refuses the grants memagg-compute asks '
                    'for; audits found executing at start are left as '
                    'they are. A group of its own, like [compute] mode, '
                    'rather than one shared option: OpenStack deployments '
                    'render each service\'s configuration per role, and '
                    'the two may differ on purpose (ballooning locally '
                    'while audits are only planned). For a cloud memagg '
                    'must not touch, set both to observe.'),
    cfg.StrOpt('topic', default='memagg-scheduler',
               help='RPC topic memagg-scheduler listens on.'),
    cfg.IntOpt('purge_interval', default=3600, min=60,
               help='Seconds between two purges of WSS and host samples '
                    'older than [wss] sample_retention_hours.'),
    cfg.StrOpt('report_topic', default='memagg_reports',
               help='Notification topic memagg-compute sends its periodic '
                    'reports on and every memagg-scheduler worker consumes '
                    '(one shared queue, <topic>.info). Compute nodes and '
                    'schedulers must agree on it.'),
    cfg.IntOpt('report_batch_size', default=50, min=1, max=500,
               help='Reports memagg-scheduler stores in one transaction: '
                    'it takes up to this many from the report topic '
                    'before storing them (or fewer after '
                    'report_batch_timeout).'),
    cfg.FloatOpt('report_batch_timeout', default=1.0, min=0.01, max=60.0,
                 help='Seconds memagg-scheduler waits for a batch of '
                      'reports to fill before storing what it has: the '
                      'longest a report waits in a quiet deployment.'),
]

upgrade_opts = [
    cfg.StrOpt('scheduler',
               help='Highest memagg-scheduler RPC API version the other '
                    'services send (unset: the newest). Set it to the '
                    'oldest scheduler\'s version during a rolling upgrade '
                    'that updates compute nodes first; below 1.6, '
                    'memagg-compute sends its reports as RPC casts rather '
                    'than on [scheduler] report_topic.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)
    conf.register_group(UPGRADE_GROUP)
    conf.register_opts(upgrade_opts, group=UPGRADE_GROUP)


def list_opts():
    return {GROUP: opts, UPGRADE_GROUP: upgrade_opts}
