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

"""``openstack memagg grant create [--wait]``: the grant the API answered
(pending from microversion 1.10), or, with --wait, the grant once set up;
a failed grant is a one-line error with its reason."""
import types

from osc_lib import exceptions
import pytest

from memaggclient.osc.v1 import grants

UUID = '66666666-6666-4666-8666-666666666666'
INSTANCE = '11111111-1111-4111-8111-111111111111'


def _grant(status, reason=None):
    return {'uuid': UUID, 'instance_uuid': INSTANCE, 'granted_mb': 256,
            'status': status, 'reason': reason, 'slabs': []}


class _Grants:
    """client.grants: create answers pending; get answers ``states`` in
    turn, the last repeated."""

    def __init__(self, *states):
        self.states = list(states)
        self.created = []
        self.gets = 0

    def create(self, instance_uuid, size_mb):
        self.created.append((instance_uuid, size_mb))
        return _grant('pending')

    def get(self, uuid):
        assert uuid == UUID
        self.gets += 1
        return self.states.pop(0) if len(self.states) > 1 else self.states[0]


class _Clock:
    """The command's clock: a sleep passes at once, and is recorded."""

    def __init__(self):
        self.now = 0.0
        self.slept = []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    fake = _Clock()
    monkeypatch.setattr(grants, 'time', fake)
    return fake


def _run(manager, *args):
    app = types.SimpleNamespace(client_manager=types.SimpleNamespace(
        memagg=types.SimpleNamespace(grants=manager)))
    command = grants.CreateGrant(app, None)
    parsed = command.get_parser('grant create').parse_args(
        ['--instance', INSTANCE, '--size-mb', '200'] + list(args))
    columns, values = command.take_action(parsed)
    return dict(zip(columns, values))


def test_without_wait_the_answer_is_shown_as_it_came():
    manager = _Grants(_grant('active'))

    shown = _run(manager)

    assert shown['status'] == 'pending'
    assert manager.created == [(INSTANCE, 200)] and manager.gets == 0


def test_wait_follows_the_grant_until_it_is_active(clock):
    manager = _Grants(_grant('pending'), _grant('active'))

    shown = _run(manager, '--wait')

    assert shown['status'] == 'active' and manager.gets == 2
    # A look a second, as "openstack server create --wait" takes.
    assert clock.slept == [1, 1]


def test_a_failed_grant_is_an_error_with_its_reason():
    manager = _Grants(_grant('failed', 'host-1 could not attach it: down'))

    with pytest.raises(exceptions.CommandError) as caught:
        _run(manager, '--wait', '30')

    assert str(caught.value) == (
        'grant %s failed: host-1 could not attach it: down' % UUID)


def test_a_grant_still_pending_at_the_deadline_is_an_error(clock):
    manager = _Grants(_grant('pending'))

    with pytest.raises(exceptions.CommandError) as caught:
        _run(manager, '--wait', '3')

    assert 'still pending after 3 s' in str(caught.value)
    assert clock.slept == [1, 1, 1]
    with pytest.raises(exceptions.CommandError) as caught:
        _run(manager, '--wait', '0')

    assert 'still pending after 0 s' in str(caught.value)
    assert 'openstack memagg grant show %s' % UUID in str(caught.value)
