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

"""Options of the [compute] group: memagg-compute, the local manager."""
from oslo_config import cfg

GROUP = cfg.OptGroup('compute', title='memagg-compute options')

MANAGE = 'manage'
OBSERVE = 'observe'

opts = [
    cfg.StrOpt('mode', default=MANAGE,
               choices=[(MANAGE, 'Measure, move the balloons, reclaim '
                                 'host-side and ask for remote memory'),
                        (OBSERVE, 'Measure and report only: change '
                                  'nothing')],
               help='What memagg-compute does with what it measures. '
                    'manage: the local policy moves the balloons, host '
                    'reclaim pages out and VMs short of memory get remote '
                    'memory. observe: it estimates and reports every '
                    'VM\'s working set and CPU as in manage mode (the '
                    'history memagg-manage trace export reads, the API '
                    'and the dashboard show), but writes no balloon '
                    'target, reclaims nothing host-side, neither asks for '
                    'nor lends remote memory and refuses the scheduler\'s '
                    'grant calls: run it on an untouched cloud to learn '
                    'what memagg would save there. Its VMs report '
                    'local_policy "observe" and no target. A balloon set '
                    'before the switch stays where it is (logged once per '
                    'VM); so do pages host reclaim already paged out and '
                    'grants already attached. It still sets the balloon '
                    'statistics period (balloon_stats_period) it reads. '
                    'Set [scheduler] mode as well: each service reads its '
                    'own, so a staged rollout can balloon locally '
                    '(compute manage) while audits are only planned '
                    '(scheduler observe).'),
    cfg.IntOpt('collect_interval', default=10, min=1,
               help='Seconds between two collection periods (libvirt stats, '
                    'WSS estimation, balloon targets, report).'),
    cfg.StrOpt('hypervisor_driver', default='libvirt',
               help='Hypervisor driver plug-in (memagg.hypervisor '
                    'entry point).'),
    cfg.StrOpt('compute_api_driver', default='none',
               help='Compute API plug-in (memagg.compute_api entry point) '
                    'that tells a VM\'s QoS weight for the weighted local '
                    'policy and that memagg-scheduler executes '
                    'consolidation plans through: none knows no weights '
                    '(every VM gets [local_policy] default_weight) and '
                    'cannot execute plans (no Nova needed); nova reads '
                    'memagg:weight from the VM\'s flavor extra specs or '
                    'image properties and live-migrates VMs with the [nova] '
                    'credentials.'),
    cfg.StrOpt('libvirt_uri', default='qemu:///system',
               help='libvirt connection URI. memagg-aio falls back to '
                    'test:///default when no libvirtd answers.'),
    cfg.StrOpt('domain_name_regex', default='',
               help='Manage only the running domains whose name this '
                    'regular expression matches from its start (Python '
                    're.match), e.g. "instance-" for Nova\'s default '
                    'instance_name_template. memagg-compute leaves every '
                    'other domain alone: it neither measures, balloons, '
                    'pages out nor reports it, so keep their memory out '
                    'of guest_memory_mb (or in reserved_host_memory_mb). '
                    'Empty: every running domain.'),
    cfg.IntOpt('balloon_stats_period', default=5, min=1,
               help='Seconds between two refreshes of a guest\'s balloon '
                    'statistics; memagg-compute sets it on every running '
                    'guest with a balloon device. Keep it at most '
                    'collect_interval.'),
    cfg.IntOpt('reserved_host_memory_mb', default=512, min=0,
               help='Host memory kept for the host itself; never lent.'),
    cfg.IntOpt('guest_memory_mb', default=0, min=0,
               help='Memory, in MiB, that the local policy shares among '
                    'this host\'s guests (their balloon targets in all, '
                    'and what is left of it is the free reservoir this '
                    'host may lend). 0: the host memory the hypervisor '
                    'reports, less reserved_host_memory_mb, read again '
                    'every period. Set a fixed size where the reported '
                    'memory moves (memory hot-plug) or where other '
                    'services take a fixed share of the host.'),
]


def observing(conf):
    """Whether ``conf`` sets [compute] mode = observe: memagg-compute
    measures and reports, and changes nothing."""
    return conf.compute.mode == OBSERVE


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
