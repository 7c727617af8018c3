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

"""API microversions: parse the request's version and gate features on it.

A client asks for a version with ``OpenStack-API-Version: memory-aggregation
1.1`` (or ``latest``). No header means the minimum version, so a client
written against 1.0 never sees a change it did not ask for.
"""
import re

SERVICE_TYPE = 'memory-aggregation'
HEADER = 'OpenStack-API-Version'

# Each version and what it changed; the last one is the maximum.
VERSIONS = {
    (1, 0): 'Initial version: services, hosts, instances and their WSS '
            'history, reservoir, grants, audits, migrations.',
    (1, 1): 'Instances show remote_mb and wss_maxavg_mb.',
    (1, 2): 'Consolidation rounds on demand: POST /v1/audits and POST '
            '/v1/audits/{uuid}/execute; audits show auto_execute and '
            'unplaced.',
    (1, 3): 'Remote memory on demand: POST /v1/grants, DELETE '
            '/v1/grants/{uuid} and POST /v1/hosts/{name}/reclaim; grants '
            'show partial, reason and slab_size_mb, slabs their endpoint.',
    (1, 4): 'Migrations on demand: POST /v1/migrations moves an instance '
            'to a named host, as a one-action plan.',
    (1, 5): 'GET /v1/host_usages: the memory of every host and what its '
            'instances use, in one answer, for the Nova scheduler filter.',
    (1, 6): 'Metadata-only live migration: a migration of an instance '
            'with grants moves them to the destination; migrations show '
            'remote_mb and local_copy_left_mb.',
    (1, 7): 'Instances show local_policy: the local policy of their '
            'compute node, which sets their balloon target.',
    (1, 8): 'Instances and their WSS history show the native sampler '
            'behind each estimate: sampler_backend, sampler_error_mb, '
            'sampler_pages and warming.',
    (1, 9): 'DELETE /v1/grants/{uuid} and POST /v1/hosts/{name}/reclaim '
            'answer at once, at every version: a grant is releasing, and '
            'the slabs a reclaim took reclaiming, until memagg-scheduler '
            'has the hosts give the memory back; a release that a host '
            'does not answer ends failed with the reason. Of concurrent '
            'requests one only takes effect. The reclaim answer lists its '
            'slabs.',
    (1, 10): 'POST /v1/grants answers 202 at once with the grant pending, '
             'its slabs reserved on donors; memagg-scheduler sets it up and '
             'it ends active, or failed with the reason (409 at once when '
             'not a slab can be reserved).',
    (1, 11): 'Instances show their host-side reclaim: reclaimed_mb, '
             'promotion_rate, promotion_rate_pct, promotion_slo and '
             'reclaim_mechanism; their WSS history reclaimed_mb and '
             'promotion_rate.',
    (1, 12): 'GET /v1/host_usages takes limit, marker, sort_key, '
             'sort_dir, host_contains and state, and shows lent_mb, '
             'borrowed_mb and free_reservoir_mb per host; GET '
             '/v1/cloud_usage: the memory of the whole cloud now and over '
             'time.',
    (1, 13): 'Tiered remote memory: grants show l1_mb (on donors) and '
             'l2_mb (in the local copy of their consumer only), their '
             'slabs their tier; the reservoir local_tier_mb per host and '
             'in all.',
    (1, 14): 'A grant shows its statistics: its ledger per tier (puts, '
             'gets, flushes, moved_in, moved_out, evicts and used, in 4 KiB '
             'pages) as its consumer host last reported it; instances show '
             'l1_share_mb, their L1 allocation by the tier policy.',
}
MIN_VERSION = min(VERSIONS)
MAX_VERSION = max(VERSIONS)

_VERSION_RE = re.compile(r'^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$')


class MalformedVersion(ValueError):
    """The header's value for memagg is not ``X.Y`` nor ``latest`` (400)."""


class UnsupportedVersion(ValueError):
    """The requested version is outside [MIN_VERSION, MAX_VERSION] (406)."""


def to_string(version):
    """(1, 1) -> '1.1'."""
    return '%d.%d' % version


def parse(text):
    """'1.3' -> (1, 3); None when ``text`` is not of the form X.Y."""
    match = _VERSION_RE.match(text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def parse_header(value):
    """Return the version a header value asks memagg for.

    ``value`` may list several services, comma-separated; entries for other
    service types are ignored. Returns MIN_VERSION when memagg is not named.
    Raises MalformedVersion or UnsupportedVersion.
    """
    if not value:
        return MIN_VERSION
    requested = None
    for entry in value.split(','):
        parts = entry.strip().split()
        if not parts or parts[0].lower() != SERVICE_TYPE:
            continue
        if len(parts) != 2:
            raise MalformedVersion(
                "%s must be '%s X.Y' or '%s latest', got %r"
                % (HEADER, SERVICE_TYPE, SERVICE_TYPE, entry.strip()))
        requested = parts[1]
    if requested is None:
        return MIN_VERSION
    if requested.lower() == 'latest':
        return MAX_VERSION
    version = parse(requested)
    if version is None:
        raise MalformedVersion(
            "%s: version %r is not of the form X.Y (e.g. %s) or 'latest'"
            % (HEADER, requested, to_string(MAX_VERSION)))
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise UnsupportedVersion(
            'Version %s is not supported by this API: ask for a version from '
            '%s to %s, or latest' % (requested, to_string(MIN_VERSION),
                                     to_string(MAX_VERSION)))
    return version


def response_header(version):
    """The OpenStack-API-Version value that tells the client what it got."""
    return '%s %s' % (SERVICE_TYPE, to_string(version))
