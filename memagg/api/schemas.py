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

"""JSON Schemas of the API's responses, and the collections it pages.

These are the only definitions: memagg.api.views builds responses from
their properties and memagg.api.openapi publishes them; the requests'
schemas (query strings and bodies) are memagg.api.request_schemas'.
"""
import copy

from memagg.api import field_docs

UUID = {'type': 'string', 'format': 'uuid',
        'description': 'A UUID such as 2f1c5a5e-8d4b-4c1e-9d7e-3b7a1c2d4e5f.'}
NAME = {'type': 'string', 'minLength': 1, 'maxLength': 255}
HOST_NAME = dict(NAME, description="The host's name, as Nova knows it.")
DATETIME = {'type': 'string', 'format': 'date-time',
            'description': 'ISO 8601 date-time, UTC unless an offset is '
                           'given, e.g. 2024-05-01T12:00:00Z.'}
BOOLEAN = {'type': 'boolean', 'description': 'true or false.'}
INTEGER = {'type': 'integer'}
# A row's id, as a marker: what the database's 64-bit ids hold.
ROW_ID = {'type': 'integer', 'minimum': 1, 'maximum': 2 ** 63 - 1}


def _nullable(schema):
    schema = copy.deepcopy(schema)
    schema['type'] = [schema['type'], 'null']
    schema.pop('description', None)
    return schema


def closed_object(properties, optional=()):
    """A closed object schema; every property is required but ``optional``."""
    return {
        'type': 'object',
        'properties': properties,
        'required': sorted(k for k in properties if k not in optional),
        'additionalProperties': False,
    }


_TIMESTAMPS = {'created_at': DATETIME, 'updated_at': _nullable(DATETIME)}

# Response fields that exist only from a microversion on (component ->
# field -> version). Views drop them below that version.
_AUDIT_SINCE = {'auto_execute': (1, 2), 'unplaced': (1, 2)}
_GRANT_SINCE = {'partial': (1, 3), 'reason': (1, 3), 'slab_size_mb': (1, 3),
                'l1_mb': (1, 13), 'l2_mb': (1, 13)}
_GRANT_DETAIL_SINCE = dict(_GRANT_SINCE, statistics=(1, 14))
_MIGRATION_SINCE = {'remote_mb': (1, 6), 'local_copy_left_mb': (1, 6)}
_SAMPLER_SINCE = {'sampler_backend': (1, 8), 'sampler_error_mb': (1, 8),
                  'sampler_pages': (1, 8), 'warming': (1, 8)}
_RECLAIM_SINCE = {'reclaimed_mb': (1, 11), 'promotion_rate': (1, 11),
                  'promotion_rate_pct': (1, 11), 'promotion_slo': (1, 11),
                  'reclaim_mechanism': (1, 11)}
FIELDS_SINCE = {
    'Instance': dict({'remote_mb': (1, 1), 'wss_maxavg_mb': (1, 1),
                      'local_policy': (1, 7), 'l1_share_mb': (1, 14)},
                     **_SAMPLER_SINCE,
                     **_RECLAIM_SINCE),
    'WssSample': dict(_SAMPLER_SINCE, **_RECLAIM_SINCE),
    'Audit': _AUDIT_SINCE,
    'AuditDetail': _AUDIT_SINCE,
    'Grant': _GRANT_SINCE,
    'GrantDetail': _GRANT_DETAIL_SINCE,
    'Slab': {'endpoint': (1, 3), 'tier': (1, 13)},
    'Migration': _MIGRATION_SINCE,
    'Reclaimed': {'slabs': (1, 9)},
}

_REASONS = {'type': 'object', 'additionalProperties': {'type': 'string'}}

# The native sampler behind an estimate (memagg-compute), since 1.8.
_SAMPLER = {
    'sampler_backend': {'type': ['string', 'null'], 'description': (
        'The kernel interface of the native sampler behind the estimate: '
        'page_idle, damon_paddr, damon_memcg, damon_vaddr or clear_refs; '
        'null when the estimator samples nothing or the sampler is '
        'unavailable. '
        'Since 1.8.')},
    'sampler_error_mb': {'type': ['number', 'null'], 'description': (
        'Half-width, MiB, of the confidence interval (at the compute '
        'node [wss] sampler_confidence) of the sampled hot set the '
        'estimate was built on; null without a sampled window. '
        'Since 1.8.')},
    'sampler_pages': {'type': ['integer', 'null'], 'description': (
        'Pages the sampler drew for the estimate; null without a sampled '
        'window. Since 1.8.')},
    'warming': {'type': 'boolean', 'description': (
        'The estimate was kept out of wss_maxavg_mb: the first window of '
        'the sampler, a window during which the allocation moved, or the '
        'balloon statistics standing in for a lost window. Since 1.8.')},
}

# Which compute host runs an instance: for memagg:instance:host only.
_HOST = dict(NAME, description=(
    'The compute host; shown only to callers memagg:instance:host allows '
    '(admins by default).'))

# Host-side reclaim of the instance (memagg-compute), since 1.11; the WSS
# history keeps the first two.
_HISTORY_RECLAIM = {
    'reclaimed_mb': {'type': ['integer', 'null'], 'description': (
        'Guest memory host-side reclaim holds paged out into the compute '
        'node\'s swap and not yet faulted back, MiB; counted as freed in '
        'the host\'s reservoir, as ballooned memory is. 0 when nothing is '
        'reclaimed; null before the compute node reported it. '
        'Since 1.11.')},
    'promotion_rate': {'type': ['number', 'null'], 'description': (
        'Pages of the instance faulted back from the host\'s swap per '
        'minute (its promotion rate); null on the first period of host '
        'reclaim or when host reclaim is off. Since 1.11.')},
}
_RECLAIM = dict(_HISTORY_RECLAIM, **{
    'promotion_rate_pct': {'type': ['number', 'null'], 'description': (
        'promotion_rate as a percentage of wss_maxavg_mb per minute, the '
        'unit of the compute node\'s [host_reclaim] promotion_slo; null '
        'without either. Since 1.11.')},
    'promotion_slo': {'type': ['number', 'null'], 'description': (
        'The promotion rate host reclaim holds the instance to, pages per '
        'minute ([host_reclaim] promotion_slo percent of wss_maxavg_mb); '
        'above it host reclaim backs off. null when host reclaim is off '
        'or without a WSS max-average. Since 1.11.')},
    'reclaim_mechanism': {'type': ['string', 'null'], 'description': (
        'How host reclaim pages the instance out: madvise '
        '(process_madvise MADV_PAGEOUT of its cold pages), memcg (its '
        'cgroup v2 memory.reclaim) or none, followed by ": " and the '
        'reason when it reclaims nothing (host reclaim off, no mechanism '
        'on the host, no free swap, opted out through '
        'memagg:host_reclaim). null before the compute node reported it. '
        'Since 1.11.')},
})

COMPONENTS = {
    'Link': closed_object({'rel': {'type': 'string'},
                           'href': {'type': 'string',
                                    'format': 'uri-reference',
                                    'description': (
                                        'A URL under [api] public_endpoint '
                                        'or a trusted proxy\'s, else a path '
                                        'from the server\'s root to resolve '
                                        'against the URL asked.')}}),
    'Service': closed_object(dict({
        'id': INTEGER, 'host': NAME, 'binary': {'type': 'string'},
        'topic': {'type': 'string'}, 'report_count': INTEGER,
        'disabled': {'type': 'boolean'},
        'last_seen_at': _nullable(DATETIME),
        'state': {'type': 'string', 'enum': ['up', 'down'],
                  'description': 'down when the last heartbeat is older '
                                 'than [DEFAULT] service_down_time.'},
    }, **_TIMESTAMPS)),
    'Host': closed_object(dict({
        'name': NAME, 'memory_mb': INTEGER, 'reserved_mb': INTEGER,
        'vcpus': INTEGER, 'cpu_util': {'type': 'number'},
        'free_reservoir_mb': INTEGER, 'lendable_mb': INTEGER,
        'state': {'type': 'string'}, 'reported_at': _nullable(DATETIME),
    }, **_TIMESTAMPS)),
    'Instance': closed_object(dict({
        'uuid': UUID, 'name': {'type': 'string'}, 'host': _HOST,
        'project_id': {'type': ['string', 'null']},
        'status': {'type': 'string'}, 'booked_mb': INTEGER,
        'current_mb': INTEGER, 'target_mb': _nullable(INTEGER),
        'wss_mb': _nullable(INTEGER),
        'wss_maxavg_mb': dict(_nullable(INTEGER), description=(
            'Smoothed working set (WSS^maxavg), MiB. Since 1.1.')),
        'estimator': {'type': ['string', 'null']},
        'local_policy': {'type': ['string', 'null'], 'description': (
            'The compute node\'s local policy that sets the balloon '
            'target, with its mode (e.g. cmms/equal); observe when its '
            'memagg-compute runs in observe mode and sets no target; null '
            'for an unmanaged instance or before its host reported one. '
            'Since 1.7.')},
        'cpu_util': {'type': 'number'},
        'remote_mb': dict(INTEGER, description=(
            'Memory of the instance held remotely (grants), MiB. '
            'Since 1.1.')),
        'l1_share_mb': dict(_nullable(INTEGER), description=(
            'Its L1 allocation, MiB: its memagg:weight share of the '
            'memory on donors its host may use, by the tier policy\'s last '
            'plan; a donor that needs memory back takes it first from the '
            'instances most over theirs. Null before a plan. Since 1.14.')),
    }, **_SAMPLER, **_RECLAIM, **_TIMESTAMPS), optional=(
        'host', 'remote_mb', 'wss_maxavg_mb', 'local_policy', 'l1_share_mb',
        *_SAMPLER, *_RECLAIM)),
    'WssSample': closed_object(dict({
        'id': INTEGER, 'host': _HOST, 'sampled_at': DATETIME,
        'wss_mb': INTEGER, 'wss_maxavg_mb': _nullable(INTEGER),
        'current_mb': INTEGER, 'target_mb': _nullable(INTEGER),
        'estimator': {'type': 'string'},
    }, **_SAMPLER, **_HISTORY_RECLAIM), optional=(
        'host', *_SAMPLER, *_HISTORY_RECLAIM)),
    'ReservoirHost': closed_object({
        'host': NAME, 'free_reservoir_mb': INTEGER, 'lendable_mb': INTEGER,
        'lent_mb': INTEGER, 'borrowed_mb': INTEGER,
        'local_tier_mb': dict(INTEGER, description=(
            'Memory of active grants to the host\'s instances kept in its '
            'local copies only (the slow tier: reclaimed or demoted, or '
            'being promoted back), MiB. Since 1.13.')),
    }, optional=('local_tier_mb',)),
    'Slab': closed_object({
        'index': INTEGER, 'size_mb': INTEGER,
        'donor_host': dict(NAME, description=(
            'The host that lends it, lent it last (reclaimed) or, for a '
            'slab granted in the local tier when the donors were short '
            '([reservoir] local_tier), the consumer itself.')),
        'replica_host': {'type': ['string', 'null']},
        'status': {'type': 'string', 'description': (
            'pending, active (on its donor: the fast tier, L1), '
            'reclaiming (a reclaim or a demotion took it and has its '
            'consumer and donor give it up), promoting (a donor is given '
            'it back and its consumer copies it there), releasing (the '
            'donor has not confirmed it freed the slab), released or '
            'reclaimed (in the consumer\'s local copy only: the slow '
            'tier, L2).')},
        'endpoint': {'type': ['string', 'null'], 'description': (
            'The donor\'s data-path endpoint, e.g. tcp://host:7450. '
            'Since 1.3.')},
        'tier': {'type': ['string', 'null'], 'enum': ['l1', 'l2', None],
                 'description': (
                     'l1 while its pages are on its donor (active, or '
                     'reclaiming), l2 while they are in the consumer\'s '
                     'local copy only (reclaimed, or promoting back); null '
                     'once the grant gave it up. Since 1.13.')},
    }, optional=('endpoint', 'tier')),
    'Grant': closed_object(dict({
        'uuid': UUID, 'instance_uuid': UUID, 'consumer_host': NAME,
        'requested_mb': INTEGER,
        'granted_mb': dict(INTEGER, description=(
            'Memory the grant lends now on donors, MiB: less than '
            'requested_mb when the grant is partial, slabs were reclaimed '
            'or some are in the local tier (l2_mb).')),
        'status': {'type': 'string', 'description': (
            'pending (being set up), active, releasing (a DELETE was '
            'accepted; memagg-scheduler has the hosts give the memory '
            'back), released or failed (reason says why; a release fails '
            'when a host did not answer after [reservoir] '
            'operation_attempts).')},
        'slab_size_mb': dict(INTEGER, description=(
            'Size of each of its slabs, MiB. Since 1.3.')),
        'partial': {'type': 'boolean', 'description': (
            'Whether less than requested was granted, in both tiers; '
            'reason says why. Since 1.3.')},
        'reason': {'type': ['string', 'null'], 'description': (
            'Why the grant is partial or failed. Since 1.3.')},
        'l1_mb': dict(INTEGER, description=(
            'Of its slabs, MiB on donors (the fast tier). Since 1.13.')),
        'l2_mb': dict(INTEGER, description=(
            'Of its slabs, MiB in the consumer\'s local copy only (the '
            'slow tier: reclaimed or demoted, granted there when the '
            'donors were short, or being promoted back). Since 1.13.')),
    }, **_TIMESTAMPS), optional=tuple(_GRANT_SINCE)),
    'AuditAction': closed_object({
        'sequence': INTEGER, 'action_type': {'type': 'string'},
        'instance_uuid': {'type': ['string', 'null']},
        'source_host': {'type': ['string', 'null']},
        'dest_host': {'type': ['string', 'null']},
        'reason': {'type': ['string', 'null']},
        'state': {'type': 'string'},
    }),
    'Audit': closed_object(dict({
        'uuid': UUID,
        'state': {'type': 'string', 'description': (
            'pending, planning, recommended, executing, succeeded, partial '
            '(some actions succeeded, others failed or were skipped) or '
            'failed.')},
        'memory_basis': {'type': 'string'},
        'parameters': {'type': ['object', 'null']},
        'reason': {'type': ['string', 'null'], 'description': (
            'What the round found and planned, or why it failed.')},
        'finished_at': _nullable(DATETIME),
        'auto_execute': {'type': 'boolean', 'description': (
            'Whether the plan is executed as soon as it is made. '
            'Since 1.2.')},
        'unplaced': {
            'type': ['object', 'null'],
            'properties': {'instances': _REASONS, 'hosts': _REASONS},
            'required': ['instances', 'hosts'],
            'additionalProperties': False,
            'description': (
                'What a partial plan left as it is and why: VMs (by UUID) '
                'that fit on no host, and hosts (by name) that are '
                'underloaded but kept, overloaded but left so (their VMs '
                'cooling down after a migration, a cap on migrations '
                'reached), or left out of the round; null when the plan '
                'is complete. Since 1.2.')},
    }, **_TIMESTAMPS), optional=tuple(_AUDIT_SINCE)),
    'Migration': closed_object(dict({
        'uuid': UUID, 'instance_uuid': UUID, 'source_host': NAME,
        'dest_host': NAME, 'status': {'type': 'string'},
        'attempts': INTEGER, 'bytes_transferred': _nullable(INTEGER),
        'duration_s': _nullable({'type': 'number'}),
        'downtime_ms': _nullable({'type': 'number'}),
        'remote_share': _nullable({'type': 'number'}),
        'remote_mb': dict(_nullable(INTEGER), description=(
            'MiB of the instance\'s memory on donors at the start: it '
            'stayed there, only its slab table moved. Since 1.6.')),
        'local_copy_left_mb': dict(_nullable(INTEGER), description=(
            'MiB of the durability copy the destination still rebuilds '
            'from the donors, 0 once done; null without grants. Since '
            '1.6.')),
        'error': {'type': ['string', 'null']},
    }, **_TIMESTAMPS), optional=tuple(_MIGRATION_SINCE)),
    'Version': closed_object({
        'id': {'type': 'string'}, 'status': {'type': 'string',
                                             'enum': ['CURRENT']},
        'min_version': {'type': 'string'}, 'max_version': {'type': 'string'},
        'links': {'type': 'array', 'items': {'$ref':
                                             '#/components/schemas/Link'}},
    }),
    'Error': closed_object({
        'errors': {'type': 'array', 'minItems': 1, 'items': closed_object({
            'status': INTEGER, 'code': {'type': 'string'},
            'title': {'type': 'string'}, 'detail': {'type': 'string'},
            'request_id': {'type': ['string', 'null']},
            'field': {'type': 'string',
                      'description': 'The parameter at fault, if one is.'},
        }, optional=('field',))},
    }),
}

# Details only the single-item GET shows.
_LEDGER_COUNTS = {
    'puts': 'Pages first written to the tier.',
    'gets': 'Pages read from it.',
    'flushes': 'Pages discarded there (the guest trimmed them).',
    'moved_in': 'Pages a demotion or a promotion moved into it.',
    'moved_out': 'Pages a demotion or a promotion moved out of it.',
    'evicts': 'Pages dropped from it without a copy elsewhere (0 but '
              'for a fault).',
    'used': 'Pages the tier holds: puts + moved_in - flushes - moved_out '
            '- evicts, but for I/O racing a move when counted.',
}
COMPONENTS['TierLedger'] = closed_object({
    name: dict(INTEGER, minimum=0, description=text)
    for name, text in _LEDGER_COUNTS.items()})
COMPONENTS['GrantStatistics'] = closed_object({
    'host': dict(NAME, description=(
        'The consumer host whose memagg-swapd counted them.')),
    'reported_at': dict(DATETIME, description=(
        'When the host reported them (each collect_interval).')),
    'l1': dict({'$ref': '#/components/schemas/TierLedger'}),
    'l2': dict({'$ref': '#/components/schemas/TierLedger'}),
})
COMPONENTS['GrantDetail'] = closed_object(dict(
    COMPONENTS['Grant']['properties'],
    slabs={'type': 'array', 'items': {'$ref': '#/components/schemas/Slab'}},
    statistics={
        'oneOf': [{'$ref': '#/components/schemas/GrantStatistics'},
                  {'type': 'null'}],
        'description': (
            'The grant\'s ledger per tier, in 4 KiB pages, as its consumer '
            'host last reported it: l1 for its slabs on donors, l2 for '
            'those in the local copy only; null before the first report. '
            'Since 1.14.')}),
    optional=tuple(_GRANT_DETAIL_SINCE))
COMPONENTS['Reclaimed'] = closed_object({
    'reclaimed_mb': dict(INTEGER, description=(
        'Memory the host lent that this reclaim took, MiB (whole slabs; '
        'less than asked when it lent less, or a concurrent reclaim took '
        'some). Its slabs are reclaiming until memagg-scheduler has their '
        'consumers and the host give them up, then reclaimed; a consumer '
        'that does not answer keeps them, and its grant says why.')),
    'slabs': {'type': 'array', 'description': (
        'The slabs this reclaim took, reclaiming; GET '
        '/v1/grants/{uuid} shows how each ends. Since 1.9.'),
        'items': closed_object({'grant_uuid': UUID, 'index': INTEGER})},
}, optional=('slabs',))
COMPONENTS['AuditDetail'] = closed_object(dict(
    COMPONENTS['Audit']['properties'],
    actions={'type': 'array',
             'items': {'$ref': '#/components/schemas/AuditAction'},
             'description': 'The plan in execution order: power on, '
                            'migrations, power off.'}),
    optional=tuple(_AUDIT_SINCE))
COMPONENTS['Reservoir'] = closed_object({
    'free_reservoir_mb': INTEGER, 'lendable_mb': INTEGER, 'lent_mb': INTEGER,
    'borrowed_mb': INTEGER,
    'local_tier_mb': dict(INTEGER, description=(
        'Memory of active grants kept in their consumers\' local copies '
        'only (the slow tier), MiB, in all. Since 1.13.')),
    'hosts': {'type': 'array',
              'items': {'$ref': '#/components/schemas/ReservoirHost'}},
}, optional=('local_tier_mb',))
FIELDS_SINCE['Reservoir'] = FIELDS_SINCE['ReservoirHost'] = {
    'local_tier_mb': (1, 13)}

_MB = dict(INTEGER, minimum=0)
COMPONENTS['HostUsage'] = closed_object({
    'host': NAME, 'state': {'type': 'string', 'description': (
        'active, or standby when a plan powered it off.')},
    'memory_mb': dict(INTEGER, description='Physical memory, MiB.'),
    'reserved_mb': dict(INTEGER, description=(
        'Memory kept for the host itself, MiB.')),
    'wss_maxavg_mb': dict(_MB, description=(
        'What its instances keep in RAM, MiB: the sum of each one\'s '
        'WSS^maxavg, else its latest WSS, else its current size.')),
    'booked_mb': dict(_MB, description=(
        'Memory its instances booked (flavors), MiB.')),
    'instances': dict(_MB, description=(
        'How many instances memagg-compute reports on it.')),
    'remote_mb': dict(_MB, description=(
        'Memory active grants lend to its instances, MiB.')),
    'reported_at': dict(_nullable(DATETIME), description=(
        'When memagg-compute last reported the host; null before it did.')),
})
_PAGED_USAGE = (1, 12)
COMPONENTS['HostUsage']['properties'].update({
    'lent_mb': dict(_MB, description=(
        'Memory of active grants\' slabs the host holds for other hosts\' '
        'instances, MiB. Since 1.12.')),
    'borrowed_mb': dict(_MB, description=(
        'Memory active grants lend to the host\'s instances, MiB (the '
        'same as remote_mb). Since 1.12.')),
    'free_reservoir_mb': dict(_MB, description=(
        'The host\'s reservoir as it last reported: its memory left over '
        'by its guests\' balloon targets and its reserve, MiB. Since '
        '1.12.')),
})
FIELDS_SINCE['HostUsage'] = dict.fromkeys(
    ('lent_mb', 'borrowed_mb', 'free_reservoir_mb'), _PAGED_USAGE)
COMPONENTS['HostUsage']['required'] = sorted(
    set(COMPONENTS['HostUsage']['properties']) - set(
        FIELDS_SINCE['HostUsage']))
COMPONENTS['HostUsages'] = closed_object({
    'host_usages': {'type': 'array', 'items': {
        '$ref': '#/components/schemas/HostUsage'}},
    'reservoir_free_mb': dict(_MB, description=(
        'Memory the reservoir could lend now, MiB: what the active hosts '
        'that reported within [DEFAULT] service_down_time may lend, less '
        'the slabs they hold.')),
    'links': {'type': 'array', 'items': {'$ref': '#/components/schemas/Link'},
              'description': 'rel "next" when a limit was given and more '
                             'hosts follow. Since 1.12.'},
}, optional=('links',))

# The cloud as a whole: now, and per time bucket from the WSS samples.
_CLOUD_FIGURES = {
    'booked_mb': dict(_MB, description=(
        'Memory the instances booked (flavors), MiB.')),
    'wss_maxavg_mb': dict(_MB, description=(
        'What the instances keep in RAM, MiB: the sum of each one\'s '
        'WSS^maxavg (else its WSS).')),
    'freed_mb': dict(_MB, description=(
        'Memory booked beyond what the instances keep in RAM, MiB: '
        'booked_mb less wss_maxavg_mb, at least 0.')),
    'hosts_needed': dict(_MB, description=(
        'How few of the hosts could hold every instance\'s wss_maxavg_mb, '
        'filled largest first: a lower bound (it ignores CPU and the '
        'instances\' sizes); a consolidation audit makes the real '
        'plan.')),
    'emptiable_hosts': dict(_MB, description=(
        'Hosts that could be emptied: the hosts counted less '
        'hosts_needed.')),
}
COMPONENTS['CloudPoint'] = closed_object(dict({
    'at': dict(DATETIME, description=(
        'The start of the time bucket; it lasts step_s seconds.')),
    'hosts': dict(_MB, description=(
        'Hosts whose instances were sampled in the bucket.')),
}, **_CLOUD_FIGURES))
COMPONENTS['CloudNow'] = closed_object(dict({
    'hosts': dict(_MB, description='Hosts memagg knows.'),
    'active_hosts': dict(_MB, description=(
        'Hosts in state active (not standby): those counted by '
        'hosts_needed and emptiable_hosts.')),
    'memory_mb': dict(_MB, description='Physical memory of every host, '
                                       'MiB.'),
    'lent_mb': dict(_MB, description=(
        'Memory active grants lend across hosts, MiB.')),
}, **_CLOUD_FIGURES))
COMPONENTS['CloudUsage'] = closed_object({
    'now': {'$ref': '#/components/schemas/CloudNow'},
    'since': dict(DATETIME, description='The start of the range.'),
    'until': dict(DATETIME, description='The end of the range.'),
    'step_s': dict(INTEGER, minimum=1, description=(
        'The length of each bucket of history, seconds.')),
    'history': {'type': 'array', 'items': {
        '$ref': '#/components/schemas/CloudPoint'}, 'description': (
        'One point per bucket of the range that holds samples, oldest '
        'first; a bucket without samples (memagg-compute silent, or '
        'samples purged after [wss] sample_retention_hours) has none.')},
})


def _describe(schema, docs):
    """Give each property of ``schema`` (and of the objects it and its
    arrays hold) without a description its text in ``docs``, else in
    field_docs.COMMON; a copy each, as properties share constants."""
    for field, prop in schema.get('properties', {}).items():
        text = docs.get(field) or field_docs.COMMON.get(field)
        if 'description' not in prop and text:
            prop = schema['properties'][field] = dict(prop, description=text)
        for inner in (prop, prop.get('items', {})):
            if 'properties' in inner:
                _describe(inner, docs)


for _name, _schema in COMPONENTS.items():
    _describe(_schema, field_docs.BY_COMPONENT.get(_name, {}))


def ref(component):
    """A $ref to a component schema."""
    return {'$ref': '#/components/schemas/%s' % component}


# Every paginated collection: the db listing behind it, its item component,
# the type of its marker, its filters (typed) and whether it takes a
# since/until time range.
COLLECTIONS = {
    'services': dict(listing='services', component='Service',
                     marker=ROW_ID,
                     filters={'host': NAME, 'binary': NAME,
                              'disabled': BOOLEAN}),
    'hosts': dict(listing='hosts', component='Host', marker=NAME,
                  filters={'state': NAME}),
    'instances': dict(listing='instances', component='Instance',
                      marker=UUID,
                      filters={'host': NAME, 'project_id': NAME,
                               'status': NAME}),
    'wss_samples': dict(listing='wss_samples', component='WssSample',
                        marker=ROW_ID, filters={}, time_range=True),
    'grants': dict(listing='grants', component='Grant', marker=UUID,
                   filters={'instance_uuid': UUID, 'consumer_host': NAME,
                            'status': NAME}),
    'audits': dict(listing='audits', component='Audit', marker=UUID,
                   filters={'state': NAME}, time_range=True),
    'migrations': dict(listing='migrations', component='Migration',
                       marker=UUID,
                       filters={'instance_uuid': UUID, 'source_host': NAME,
                                'dest_host': NAME, 'status': NAME},
                       time_range=True),
}


def list_response(collection):
    """The schema of a page of a collection: items and links."""
    spec = COLLECTIONS[collection]
    return closed_object({
        collection: {'type': 'array', 'items': ref(spec['component'])},
        'links': {'type': 'array', 'items': ref('Link'),
                  'description': 'rel "next" when the page is full.'},
    })


def item_response(key, component):
    """The schema of a single-item body ``{key: component}``."""
    return closed_object({key: ref(component)})
