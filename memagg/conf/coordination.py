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

"""Options of the [coordination] group: several memagg-scheduler workers.

With ``backend_url`` set, the workers elect one leader through tooz and only
the leader runs the jobs that must run once in the cluster (memagg.common.
coordination); reports, audits and grants are served by every worker.
"""
from oslo_config import cfg

GROUP = cfg.OptGroup(
    'coordination', title='Coordination of memagg-scheduler workers',
    help='Several memagg-scheduler workers share the RPC topic: each '
         'report, audit request or grant goes to one of them. The jobs '
         'that must run once in the cluster (periodic consolidation '
         'rounds, the sample purge, the Placement job, resuming audits '
         'and grants a dead worker left) run on one elected leader. Leave '
         'backend_url empty to run a single worker.')

opts = [
    cfg.StrOpt('backend_url', default='', secret=True,
               help='tooz URL of the coordination backend the workers '
                    'share, e.g. mysql://USER:PASSWORD@HOST/DBNAME (the '
                    'database server memagg already uses; locks are '
                    'released when a worker\'s connection closes) or '
                    'redis://HOST:6379?timeout=10 (locks expire '
                    '``timeout`` seconds, default 30, after a worker '
                    'stopped renewing them). Empty: one worker, which runs '
                    'every job itself; then run only one memagg-scheduler '
                    'per topic.'),
    cfg.FloatOpt('election_interval', default=2.0, min=0.1,
                 help='Seconds between two attempts of a worker that is '
                      'not the leader to become it, and between two checks '
                      'of the leader that it still holds its lock. A dead '
                      'leader\'s jobs are taken over within the backend\'s '
                      'lock expiry plus this interval.'),
    cfg.FloatOpt('recover_interval', default=30.0, min=1.0,
                 help='Seconds between two looks of the leader for work a '
                      'dead worker left: audits it was planning (marked '
                      'failed) or executing (resumed), grants it was '
                      'setting up (failed, slabs freed), durability copies '
                      'it followed. Used only with backend_url set; a '
                      'single worker does this at its start.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
