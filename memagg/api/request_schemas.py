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

"""JSON Schemas of the API's requests: each collection's query string,
the other query strings, and the request bodies. memagg.api.validation
checks requests against them and memagg.api.openapi publishes them. Query
schemas depend on [api] max_limit, so they are built by functions.
"""
from memagg.api import schemas
from memagg.db import listings as db_listings
from memagg.scheduler import round_options


def list_query(collection, max_limit):
    """The schema of a collection's query string (values already typed)."""
    spec = schemas.COLLECTIONS[collection]
    listing = db_listings.LISTINGS[spec['listing']]
    properties = {
        'limit': dict(schemas.INTEGER, minimum=1, maximum=max_limit,
                      description='Page size, 1 to %d.' % max_limit),
        'marker': dict(spec['marker'], description=(
            'The %s of the last item of the previous page.'
            % listing['key'])),
        'sort_key': {'type': 'string', 'enum': list(listing['sort_keys']),
                     'description': (
                         'The field to sort by; default %s. Items equal in '
                         'it keep the order they were stored in.'
                         % ', then '.join(listing['sort']))},
        'sort_dir': {'type': 'string', 'enum': ['asc', 'desc'],
                     'description': 'asc (default) or desc.'},
    }
    for name, schema in spec['filters'].items():
        properties[name] = dict(schema, description=(
            'Only items whose %s is this value.' % name))
    if spec.get('time_range'):
        column = ('sampled_at' if spec['listing'] == 'wss_samples'
                  else 'created_at')
        properties['since'] = dict(schemas.DATETIME, description=(
            'Only items with %s at or after this ISO 8601 time.' % column))
        properties['until'] = dict(schemas.DATETIME, description=(
            'Only items with %s at or before this ISO 8601 time.' % column))
    return {'type': 'object', 'properties': properties,
            'additionalProperties': False}


#: What GET /v1/host_usages sorts by (since 1.12).
HOST_USAGE_SORT_KEYS = ('host', 'state', 'memory_mb', 'booked_mb',
                        'wss_maxavg_mb', 'instances', 'remote_mb',
                        'lent_mb', 'borrowed_mb', 'free_reservoir_mb')


def host_usages_query(max_limit):
    """The query string of GET /v1/host_usages: none before 1.12, then a
    page, its sort and filters."""
    return {'type': 'object', 'additionalProperties': False, 'properties': {
        'limit': dict(schemas.INTEGER, minimum=1, maximum=max_limit,
                      description=(
                          'Page size, 1 to %d; without it, every host. '
                          'Since 1.12.' % max_limit)),
        'marker': dict(schemas.NAME, description=(
            'The host of the last item of the previous page. Since '
            '1.12.')),
        'sort_key': {'type': 'string', 'enum': list(HOST_USAGE_SORT_KEYS),
                     'description': 'The field to sort by; default host. '
                                    'Since 1.12.'},
        'sort_dir': {'type': 'string', 'enum': ['asc', 'desc'],
                     'description': 'asc (default) or desc. Since 1.12.'},
        'host_contains': dict(schemas.NAME, description=(
            'Only hosts whose name contains this text, in any case. '
            'Since 1.12.')),
        'state': dict(schemas.NAME, description=(
            'Only hosts in this state (active, standby). Since 1.12.')),
    }}


#: Most time buckets GET /v1/cloud_usage cuts a range into.
MAX_CLOUD_POINTS = 500


def cloud_usage_query(max_limit):
    """The query string of GET /v1/cloud_usage (``max_limit`` unused: the
    answer is not paged)."""
    return {'type': 'object', 'additionalProperties': False, 'properties': {
        'since': dict(schemas.DATETIME, description=(
            'The start of the range; default a day before until.')),
        'until': dict(schemas.DATETIME, description=(
            'The end of the range; default now.')),
        'points': dict(schemas.INTEGER, minimum=1, maximum=MAX_CLOUD_POINTS,
                       description=(
                           'How many buckets to cut the range into, 1 to '
                           '%d; default 60.' % MAX_CLOUD_POINTS)),
    }}


NO_QUERY = {'type': 'object', 'properties': {}, 'additionalProperties': False}

#: A body that must be empty or ``{}``.
NO_BODY = {'type': 'object', 'properties': {}, 'additionalProperties': False}


def _audit_parameters():
    properties = {'underload_require': {
        'type': 'string', 'enum': ['both', 'either'],
        'description': 'A host is emptied when both its cpu and memory '
                       'are underloaded, or either.'}}
    for name, (family, _dimension) in round_options.FAMILIES.items():
        properties[name] = {
            'type': 'string', 'minLength': 1,
            'description': 'The %s plug-in (memagg.consolidation.%s).'
                           % (family, family)}
        properties[name + '_params'] = {
            'type': 'object',
            'description': 'Parameters of the %s plug-in, as in [%s] %s_'
                           'params.' % (name, round_options.GROUP, name)}
    for name, opt in round_options.CONTROL_OPTS.items():
        properties[name] = {
            'type': 'integer' if opt.type.num_type is int else 'number',
            'minimum': opt.type.min, 'description': opt.help}
        if opt.type.max is not None:
            properties[name]['maximum'] = opt.type.max
    return schemas.closed_object(properties, optional=tuple(properties))


AUDIT_CREATE = schemas.closed_object({
    'memory_basis': {
        'type': 'string', 'enum': ['wss', 'booked'],
        'description': 'Pack VMs by their working set (wss) or their '
                       'booked memory; default [consolidation] '
                       'memory_basis.'},
    'auto_execute': dict(schemas.BOOLEAN, description=(
        'Execute the plan as soon as it is made; default false.')),
    'parameters': dict(_audit_parameters(), description=(
        'Overrides of [consolidation] options for this round.')),
}, optional=('memory_basis', 'auto_execute', 'parameters'))


_SIZE_MB = dict(schemas.INTEGER, minimum=1, maximum=2 ** 31 - 1)

GRANT_CREATE = schemas.closed_object({
    'instance_uuid': dict(schemas.UUID,
                          description='The instance to lend memory to.'),
    'size_mb': dict(_SIZE_MB, description=(
        'Memory to lend, MiB; rounded up to whole slabs ([reservoir] '
        'slab_size_mb) and cut to the instance\'s cap ([reservoir] '
        'max_remote_ratio of its booked memory).')),
})

MIGRATION_CREATE = schemas.closed_object({
    'instance_uuid': dict(schemas.UUID, description='The instance to move.'),
    'dest_host': dict(schemas.NAME, description=(
        'The host to move it to: an active host memagg knows, not the '
        'instance\'s own.')),
})

RECLAIM = schemas.closed_object({
    'size_mb': dict(_SIZE_MB, description=(
        'Memory the host wants back, MiB; whole slabs are taken, newest '
        'grants first.')),
})
