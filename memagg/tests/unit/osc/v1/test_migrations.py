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

"""``openstack memagg migration create``: its arguments become one
client call, and the migration the API answered is shown field by
field."""
import types

import pytest

from memaggclient.osc.v1 import migrations

QUEUED = {'uuid': '55555555-5555-4555-8555-555555555555',
          'instance_uuid': '11111111-1111-4111-8111-111111111111',
          'source_host': 'host-1', 'dest_host': 'host-2',
          'status': 'queued', 'attempts': 0}


class _Migrations:
    """client.migrations, recording what it is asked."""

    def __init__(self):
        self.created = []

    def create(self, instance_uuid, dest_host):
        self.created.append((instance_uuid, dest_host))
        return QUEUED


def _command():
    manager = _Migrations()
    app = types.SimpleNamespace(client_manager=types.SimpleNamespace(
        memagg=types.SimpleNamespace(migrations=manager)))
    return migrations.CreateMigration(app, None), manager


def test_create_asks_for_the_instance_and_host_and_shows_the_answer():
    command, manager = _command()
    parsed = command.get_parser('migration create').parse_args(
        [QUEUED['instance_uuid'], '--dest-host', 'host-2'])

    columns, values = command.take_action(parsed)

    assert manager.created == [(QUEUED['instance_uuid'], 'host-2')]
    assert dict(zip(columns, values)) == QUEUED
    assert list(columns) == sorted(QUEUED)


def test_create_needs_a_destination(capsys):
    command, manager = _command()

    with pytest.raises(SystemExit):
        command.get_parser('migration create').parse_args(
            [QUEUED['instance_uuid']])

    assert '--dest-host' in capsys.readouterr().err
    assert manager.created == []
