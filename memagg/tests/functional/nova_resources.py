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

"""The resources of the Nova double (memagg.tests.functional.nova_double)
and how Nova's compute API shows them: its servers, nova-compute services
and live migrations (in progress, and real ones that ended), and the body
of GET /servers/{id} that Nova's API gives an admin at a microversion.
"""
import dataclasses
import uuid


@dataclasses.dataclass
class Server:
    """A server of the double: where it runs and what it is doing."""

    id: str
    host: str
    status: str = 'ACTIVE'
    task_state: str = None
    vm_state: str = 'active'
    extra_specs: dict = dataclasses.field(default_factory=dict)
    image_id: str = None
    image_properties: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Service:
    """A nova-compute service of the double."""

    host: str
    id: str = dataclasses.field(default_factory=lambda: str(uuid.uuid4()))
    status: str = 'enabled'
    disabled_reason: str = None


@dataclasses.dataclass
class Migration:
    """A live migration in progress in the double."""

    id: int
    uuid: str
    source: str
    dest: str
    outcome: str
    looks_left: int
    copied: int = 0
    held: bool = False
    # A real migration (nova_libvirt.LiveMigration) and the statistics
    # its monitor saved.
    live: object = None
    saved: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Finished:
    """A real live migration that ended: the migration record's status
    (nova_libvirt.COMPLETED, ERROR, CANCELLED) and libvirt's result."""

    server_id: str
    migration_id: int
    source: str
    dest: str
    status: str
    result: object


# The time of the double's timestamps (a migration's and a service's
# updated_at aside: now).
TIME = '2024-05-01T12:00:00Z'


def server_body(server, at, compute_url, project_id, user_id):
    """The body of GET /servers/{id} that Nova's API gives an admin at
    microversion ``at`` for ``server``."""
    link = [{'rel': 'self',
             'href': '%s/servers/%s' % (compute_url, server.id)}]
    body = {
        'accessIPv4': '', 'accessIPv6': '', 'addresses': {},
        'config_drive': '', 'created': TIME,
        'flavor': {'id': '42', 'links': [{
            'rel': 'bookmark', 'href': compute_url + '/flavors/42'}]},
        'hostId': 'a' * 56, 'id': server.id,
        'image': '' if not server.image_id else {
            'id': server.image_id, 'links': [{
                'rel': 'bookmark',
                'href': compute_url + '/images/' + server.image_id}]},
        'key_name': None, 'links': link, 'metadata': {},
        'name': 'vm-' + server.id[:8],
        'os-extended-volumes:volumes_attached': [],
        'status': server.status, 'tenant_id': project_id,
        'updated': TIME, 'user_id': user_id,
        'OS-DCF:diskConfig': 'MANUAL',
        'OS-EXT-AZ:availability_zone': 'nova',
        # Admin-only extended attributes, shown to memagg's account.
        'OS-EXT-SRV-ATTR:host': server.host,
        'OS-EXT-SRV-ATTR:hypervisor_hostname': server.host,
        'OS-EXT-SRV-ATTR:instance_name': 'instance-00000001',
        'OS-EXT-STS:power_state': 1,
        'OS-EXT-STS:task_state': server.task_state,
        'OS-EXT-STS:vm_state': server.vm_state,
        'OS-SRV-USG:launched_at': TIME, 'OS-SRV-USG:terminated_at': None,
    }
    if server.status in ('ACTIVE', 'MIGRATING'):
        body['progress'] = 0
    if server.status == 'ERROR':
        body['fault'] = {'code': 500, 'created': TIME,
                         'message': 'live migration failed'}
    additions = [
        ((2, 3), {'OS-EXT-SRV-ATTR:reservation_id': 'r-00000001',
                  'OS-EXT-SRV-ATTR:launch_index': 0,
                  'OS-EXT-SRV-ATTR:root_device_name': '/dev/vda'}),
        ((2, 9), {'locked': False}),
        ((2, 16), {'host_status': 'UP'}),
        ((2, 19), {'description': None}),
        ((2, 26), {'tags': []}),
        ((2, 63), {'trusted_image_certificates': None}),
        ((2, 71), {'server_groups': []}),
        ((2, 73), {'locked_reason': None}),
        ((2, 90), {'OS-EXT-SRV-ATTR:hostname': 'vm'}),
        ((2, 96), {'pinned_availability_zone': None}),
        ((2, 100), {'scheduler_hints': {}}),
    ]
    for since, fields in additions:
        if at >= since:
            body.update(fields)
    if at >= (2, 47):
        body['flavor'] = {
            'disk': 1, 'ephemeral': 0, 'original_name': 'm1.small',
            'ram': 2048, 'swap': 0, 'vcpus': 1,
            'extra_specs': dict(server.extra_specs)}
    if at >= (2, 98) and server.image_id:
        body['image']['properties'] = dict(server.image_properties)
    return body
