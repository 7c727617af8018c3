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

"""What each field of the API's responses means, for the OpenAPI document
(schemas.py applies them): by field name where a name means the same in
every resource, by resource where it does not. A field whose schema
carries its own description (one that exists from a microversion on, for
one) keeps it."""

#: Fields that mean the same wherever they appear.
COMMON = {
    'created_at': 'When the record was created.',
    'updated_at': 'When the record last changed; null if it never did.',
    'uuid': 'The resource\'s UUID.',
    'instance_uuid': 'The instance (Nova server) it concerns.',
    'host': 'The compute host\'s name.',
    'consumer_host': 'The compute host of the instance the memory is lent '
                     'to.',
    'donor_host': 'The compute host that lends the memory.',
    'source_host': 'The host the instance runs on before the migration.',
    'dest_host': 'The host the instance is to run on after it.',
    'memory_mb': 'The host\'s physical memory, MiB.',
    'free_reservoir_mb': 'The host\'s reservoir as it last reported: its '
                         'memory left over by its guests\' balloon targets '
                         'and its reserve, MiB (0 when overcommitted).',
    'lendable_mb': 'Memory the host\'s memagg-swapd may lend, as its last '
                   'period decided (its reservoir less a reserve, at most '
                   'the swapd\'s capacity), MiB; 0 without remote memory.',
    'lent_mb': 'Memory of active grants\' slabs the host holds for other '
               'hosts\' instances, MiB.',
    'borrowed_mb': 'Memory active grants lend to the host\'s instances, '
                   'MiB.',
    'current_mb': 'Memory the guest has now (its balloon\'s actual size), '
                  'MiB.',
    'target_mb': 'The balloon target memagg\'s local policy set, MiB; null '
                 'for an instance memagg does not manage, or whose host '
                 'runs in observe mode.',
    'wss_mb': 'The working-set estimate, MiB: memory the guest used over '
              'the last period; null when none was made.',
    'wss_maxavg_mb': 'Smoothed working set (WSS^maxavg), MiB.',
    'estimator': 'How the estimate was made (e.g. badis/V/sampler), or why '
                 'there is none (unmanaged: ...).',
    'cpu_util': 'CPU use over the last period, in cores (1.0: one core '
                'busy).',
    'index': 'The slab\'s number within its grant, from 0.',
    'reason': 'Why: what the round found and planned, or why it failed.',
    'finished_at': 'When it ended; null while it runs.',
    'parameters': 'The [consolidation] options this audit overrode, as '
                  'given when it was created; null for none.',
    'memory_basis': 'What VMs were packed by: wss (their working sets) or '
                    'booked (their booked memory).',
}

#: Fields of one resource.
BY_COMPONENT = {
    'Link': {
        'rel': 'The link\'s relation: self, or next (the page after this '
               'one).',
    },
    'Service': {
        'id': 'The service record\'s id.',
        'host': 'The host it runs on.',
        'binary': 'The service: memagg-scheduler or memagg-compute.',
        'topic': 'The RPC topic it listens on.',
        'report_count': 'Heartbeats it has written.',
        'disabled': 'Whether an operator disabled it.',
        'last_seen_at': 'Its last heartbeat; null before the first.',
    },
    'Host': {
        'name': 'The host\'s name, as Nova knows it.',
        'reserved_mb': 'Memory kept for the host itself ([compute] '
                       'reserved_host_memory_mb), MiB.',
        'vcpus': 'The host\'s CPU cores.',
        'cpu_util': 'The host\'s CPU use over the last period, in cores.',
        'state': 'active, or standby (emptied and powered down by a '
                 'consolidation audit).',
        'reported_at': 'When memagg-compute on the host last reported; '
                       'null before its first report.',
    },
    'Instance': {
        'name': 'The libvirt domain\'s name.',
        'project_id': 'The project that owns the instance; null when its '
                      'host could not tell.',
        'status': 'active while its host reports it, gone once the host '
                  'reports it no more.',
        'booked_mb': 'The memory its flavor books, MiB.',
    },
    'WssSample': {
        'id': 'The sample\'s id (a page\'s marker).',
        'host': 'The host the instance ran on when sampled.',
        'sampled_at': 'The end of the period the sample covers.',
        'wss_mb': 'The working-set estimate of that period, MiB.',
        'wss_maxavg_mb': 'WSS^maxavg at that period, MiB; null before '
                         'there were enough periods.',
        'current_mb': 'The guest\'s memory at that period, MiB.',
        'target_mb': 'The balloon target set at that period, MiB; null '
                     'when none was.',
        'estimator': 'How that estimate was made.',
    },
    'ReservoirHost': {
        'host': 'The host\'s name.',
    },
    'Reservoir': {
        'free_reservoir_mb': 'The hosts\' reservoirs, in all, MiB.',
        'lendable_mb': 'What the hosts may lend, in all, MiB.',
        'lent_mb': 'Memory lent now, in all, MiB.',
        'borrowed_mb': 'Memory borrowed now, in all, MiB.',
        'hosts': 'Each host\'s share.',
    },
    'Slab': {
        'size_mb': 'The slab\'s size, MiB.',
        'replica_host': 'A second donor holding a copy of the slab; null '
                        'without one.',
    },
    'Grant': {
        'requested_mb': 'Memory asked for, MiB.',
    },
    'GrantDetail': {
        'requested_mb': 'Memory asked for, MiB.',
        'slabs': 'The grant\'s slabs, by index.',
    },
    'Audit': {
        'instances': 'The VMs left where they are (by UUID): why each.',
        'hosts': 'The hosts left as they are (by name): why each.',
    },
    'AuditDetail': {
        'instances': 'The VMs left where they are (by UUID): why each.',
        'hosts': 'The hosts left as they are (by name): why each.',
    },
    'AuditAction': {
        'sequence': 'Its place in the plan, from 0.',
        'action_type': 'power_on, migrate or power_off.',
        'instance_uuid': 'The instance it migrates; null for a power '
                         'action.',
        'source_host': 'The host a migration leaves, or the host powered '
                       'on or off.',
        'dest_host': 'The host a migration goes to; null for a power '
                     'action.',
        'reason': 'Why it failed or was skipped; null otherwise.',
        'state': 'pending, running, succeeded, failed or skipped.',
    },
    'Migration': {
        'status': 'queued, running, succeeded or failed.',
        'attempts': 'Times memagg-scheduler asked Nova to migrate it.',
        'bytes_transferred': 'Memory the live migration copied, bytes; '
                             'null until it ended.',
        'duration_s': 'How long the live migration took, s; null until it '
                      'ended.',
        'downtime_ms': 'How long the guest was paused at the switch-over, '
                       'ms; null when the hypervisor did not say.',
        'remote_share': 'The share of the instance\'s memory on donors '
                        'when it started (0 to 1); null without a grant.',
        'error': 'Why it failed; null otherwise.',
    },
    'Version': {
        'id': 'The API version, e.g. v1.',
        'status': 'CURRENT: the version this server serves.',
        'min_version': 'The oldest microversion it serves.',
        'max_version': 'The newest microversion it serves.',
        'links': 'Where the version is.',
    },
    'Error': {
        'errors': 'One error (memagg answers one at a time).',
        'status': 'The HTTP status.',
        'code': 'A stable code for programs, e.g. marker_not_found.',
        'title': 'The HTTP status\'s phrase.',
        'detail': 'What was wrong and how to fix it.',
        'request_id': 'The request\'s id in memagg\'s logs.',
    },
    'HostUsage': {
        'host': 'The host\'s name.',
    },
    'HostUsages': {
        'host_usages': 'One entry per host.',
    },
    'Reclaimed': {
        'index': 'The slab\'s number within that grant.',
    },
}
