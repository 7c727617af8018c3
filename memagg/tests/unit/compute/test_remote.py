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

"""memagg-compute's remote memory (memagg/compute/remote.py): the swap
ghost fed into the estimators, the period's plan acted on, the requests
to memagg-scheduler with their back-off, and the endpoints
memagg-scheduler calls (the plan itself on hand-made periods is
test_remote_plan.py's, with the helpers here).

memagg-swapd is replaced at its boundary by FakeSwapd, an in-test object
with SwapdClient's methods (the client itself is tested against a socket
in test_swapd.py and against the real daemon in
memagg/tests/functional/test_compute_remote_swapd.py); memagg-scheduler by
an object with SchedulerAPI's three remote-memory calls; the hypervisor by
a small HypervisorDriver.
"""
import logging
import os

import pytest

from memagg.common import exceptions
from memagg.compute import collector as collector_mod
from memagg.compute import memory as memory_mod
from memagg.compute import remote
from memagg.compute import remote_grants
from memagg.compute import swapd
from memagg.drivers.hypervisor import base

VM = '11111111-2222-3333-4444-555555555555'
VM2 = '66666666-7777-8888-9999-aaaaaaaaaaaa'
GRANT = '0b4f7e0c-8d7a-4f3b-9a51-3c2d1e0f9a8b'
SECRET = 'ab' * 32
GRANT2 = '2c5a8e1d-9b6f-4c3a-8d72-4e3f2a1b0c9d'
OFFER = 'cd' * 32
MIB = 1024 * 1024


def result(uuid, wss, target, shortage=True, managed=True):
    return memory_mod.VmResult(uuid=uuid, current_mb=target, wss_mb=wss,
                               target_mb=target, shortage=shortage,
                               managed=managed)


def dom(uuid, booked=2048, stats=None):
    return base.DomainInfo(uuid=uuid, name=uuid[:8], max_memory_mb=booked,
                           current_memory_mb=booked, vcpus=1, cpu_time_ns=0,
                           memory_stats=stats or {})


def donor(capacity_mb=4096, used_mb=0):
    return {'capacity': capacity_mb * MIB, 'used': used_mb * MIB,
            'grants': 0, 'slabs': 0, 'refused': 0}


def period(reservoir_mb, *results):
    return memory_mod.PeriodResult(vms={r.uuid: r for r in results},
                                   reservoir_mb=reservoir_mb)


# -- RemoteMemory with its boundaries replaced ----------------------------

class FakeSwapd:
    """SwapdClient's methods over an in-test state; ``down`` makes every
    call raise SwapdUnavailable, ``errors[method]`` raise that SwapdError.
    """

    def __init__(self):
        self.down = False
        self.errors = {}
        self.calls = []
        self.exports = {}       # grant -> describe dict
        self.events = {}        # grant -> [(kind, page)]
        self.stats = donor()

    def _call(self, name, *args):
        self.calls.append((name,) + args)
        if self.down:
            raise swapd.SwapdUnavailable('no such file (test)')
        if name in self.errors:
            raise self.errors[name]

    def export_list(self):
        self._call('export_list')
        return list(self.exports)

    def export_describe(self, grant):
        self._call('export_describe', grant)
        return self.exports[grant]

    def export_create(self, grant, key, size, slab_size, local, slabs,
                      adopt=False, seal=False):
        self._call('export_create', grant, key, size, slab_size, local,
                   slabs, *(('adopt',) if adopt else ()),
                   *(('seal',) if seal else ()))
        self.exports[grant] = {'grant': grant, 'local': local,
                               'sealed': seal, 'key_pending': adopt and seal}
        reply = {'name': 'memagg-swap-' + grant,
                 'socket': '/run/exports/%s.sock' % grant}
        if adopt and seal:
            reply['key_offer'] = OFFER
        return reply

    def export_key_wrap(self, grant, offer):
        self._call('export_key_wrap', grant, offer)
        if grant not in self.exports:
            raise swapd.SwapdError('ENOENT', 'grant %s: no export' % grant)
        return 'ab' * 93

    def export_key_install(self, grant, wrapped):
        self._call('export_key_install', grant, wrapped)
        self.exports[grant]['key_pending'] = False

    def export_drop(self, grant, delete=False):
        self._call('export_drop', grant, delete)
        if self.exports.pop(grant, None) is None:
            raise swapd.SwapdError('ENOENT', 'grant %s: no export' % grant)

    def export_stats(self, grant):
        self._call('export_stats', grant)
        if grant not in self.exports:
            raise swapd.SwapdError('ENOENT', 'grant %s: no export' % grant)
        return {'reads': 5, 'stored_pages': 2560, 'rebuild_left': 257,
                'sealed': int(self.exports[grant]['sealed']),
                'key_pending': int(self.exports[grant]['key_pending'])}

    def export_rebuild(self, grant):
        self._call('export_rebuild', grant)
        if grant not in self.exports:
            raise swapd.SwapdError('ENOENT', 'grant %s: no export' % grant)
        return {'rebuild_left': 257}

    def export_reclaim(self, grant, slabs=None):
        self._call('export_reclaim', grant, slabs)
        return 2

    def grant_alloc(self, grant, key, slab_size, slabs):
        self._call('grant_alloc', grant, key, slab_size, slabs)
        return {'endpoint': 'tcp://10.0.0.2:7450', 'rkey': 77,
                'slabs': [{'index': i, 'remote_addr': 4096 * (i + 1)}
                          for i in slabs[:2]]}

    def grant_free(self, grant, slabs=None):
        self._call('grant_free', grant, slabs)
        return 3

    def donor_stats(self):
        self._call('donor_stats')
        return dict(self.stats)

    def ghost_all(self, grant):
        self._call('ghost_all', grant)
        return self.events.pop(grant, []), 0


class FakeScheduler:
    """SchedulerAPI's remote-memory calls; ``fail[method]`` raises."""

    def __init__(self):
        self.calls = []
        self.fail = {}
        self.moved = {}
        self.release_hosts = []

    def _call(self, name, *args, timeout=None):
        self.calls.append((name,) + args + (timeout,))
        if name in self.fail:
            raise self.fail[name]

    def allocate_remote(self, ctxt, instance_uuid, host, size_mb,
                        timeout=None):
        self._call('allocate_remote', instance_uuid, host, size_mb,
                   timeout=timeout)
        return {'uuid': GRANT, 'instance_uuid': instance_uuid,
                'granted_mb': size_mb, 'requested_mb': size_mb,
                'partial': False}

    def release_grant(self, ctxt, grant_uuid, consumer_host=None,
                      timeout=None):
        self._call('release_grant', grant_uuid, timeout=timeout)
        self.release_hosts.append(consumer_host)
        # The scheduler names the grant's consumer: another host once its
        # VM was live-migrated there.
        return {'uuid': grant_uuid,
                'consumer_host': self.moved.get(grant_uuid, consumer_host)}

    def reclaim(self, ctxt, host, size_mb, timeout=None):
        self._call('reclaim', host, size_mb, timeout=timeout)
        return size_mb


class Driver(base.HypervisorDriver):
    def __init__(self):
        self.domains = {}
        self.attached = []
        self.detached = []
        self.attach_error = None
        self.reconnect_delays = []
        self.resumed = []
        self.paused = set()

    def get_host_info(self):
        return base.HostInfo('node', 8192, 8192, 2)

    def list_domains(self):
        return list(self.domains.values())

    def attach_swap_disk(self, uuid, socket_path, export_name, serial,
                         reconnect_delay=0):
        if self.attach_error is not None:
            raise self.attach_error
        self.attached.append((uuid, socket_path, export_name, serial))
        self.reconnect_delays.append(reconnect_delay)
        return 'vdb'

    def resume_after_swap_error(self, uuid, serials):
        self.resumed.append((uuid, sorted(serials)))
        return uuid in self.paused

    def detach_swap_disk(self, uuid, serial):
        self.detached.append((uuid, serial))
        raise base.DomainGone(uuid)


@pytest.fixture
def clock():
    return [1000.0]


@pytest.fixture
def lmc(conf, tmp_path, clock):
    conf.config(state_dir=str(tmp_path / 'state'),
                export_dir=str(tmp_path / 'exports'), retry_interval=60,
                scheduler_timeout=33, group='swapd')
    conf.config(donor_reserve_mb=1024, max_remote_ratio=0.5,
                group='reservoir')
    return remote.RemoteMemory(Driver(), 'node-a', conf.conf,
                               FakeScheduler(), client=FakeSwapd(),
                               clock=lambda: clock[0])


def grant_dict(**changes):
    grant = {'uuid': GRANT, 'instance_uuid': VM, 'secret': SECRET,
             'slab_size_mb': 64, 'granted_mb': 128,
             'slabs': [{'index': 1, 'endpoint': 'tcp://h2:7450',
                        'remote_addr': 8192, 'rkey': 9, 'size_mb': 64,
                        'status': 'prepared', 'donor_host': 'h2'},
                       {'index': 0, 'endpoint': 'tcp://h1:7450',
                        'remote_addr': 4096, 'rkey': 7, 'size_mb': 64,
                        'status': 'prepared', 'donor_host': 'h1'}]}
    grant.update(changes)
    return grant


@pytest.fixture
def tlp_lmc(conf, lmc, clock):
    """A RemoteMemory like lmc's, with [reservoir] remote_budget = tlp."""
    conf.config(remote_budget='tlp', group='reservoir')
    return remote.RemoteMemory(Driver(), 'node-a', conf.conf,
                               FakeScheduler(), client=FakeSwapd(),
                               clock=lambda: clock[0])


def test_ghost_events_feed_the_vms_tracker(lmc):
    lmc.client.exports[GRANT] = {'local': remote_grants.local_copy_path(
        '/s', VM, GRANT)}
    lmc.client.events[GRANT] = [('o', 1), ('o', 2), ('o', 3), ('i', 1),
                                ('i', 9)]
    ghosts = lmc.ghost_periods([dom(VM), dom(VM2)])
    assert list(ghosts) == [VM]
    ghost = ghosts[VM]
    assert (ghost.swap_outs, ghost.swap_ins, ghost.unmatched_swap_ins) == (
        3, 1, 1)
    # Page 1 had 2 pages evicted after it: distance 3, in the first bucket.
    assert ghost.distance_pages == 1024
    # The queue stays across periods: page 2 swapped in next period.
    lmc.client.events[GRANT] = [('i', 2)]
    assert lmc.ghost_periods([dom(VM)])[VM].swap_ins == 1


def test_swapd_down_leaves_the_estimators_without_ghost_logged_once(
        lmc, caplog):
    lmc.client.down = True
    with caplog.at_level(logging.WARNING, logger='memagg.compute.remote'):
        assert lmc.ghost_periods([dom(VM)]) == {}
        assert lmc.ghost_periods([dom(VM)]) == {}
        lmc.plan_period(period(3000), [dom(VM)])
    warnings = [r for r in caplog.records if 'does not answer' in
                r.getMessage()]
    assert len(warnings) == 1
    assert lmc.lendable_mb == 0


def test_recover_finds_exports_and_their_vms_without_dropping_any(lmc):
    lmc.client.exports = {
        GRANT: {'local': remote_grants.local_copy_path('/s', VM, GRANT)},
        VM2: {'local': '/elsewhere/x.img'}}
    lmc.client.down = True
    lmc.recover()
    assert lmc.grants_by_instance() == {}
    lmc.client.down = False
    # Recovered on the next period once memagg-swapd answers.
    lmc.ghost_periods([dom(VM)])
    assert lmc.grants_by_instance()[VM].uuid == GRANT
    assert not [c for c in lmc.client.calls if c[0] == 'export_drop']


def test_a_short_vm_gets_a_grant_asked_once_and_retried_with_backoff(
        lmc, clock):
    lmc.scheduler_api.fail['allocate_remote'] = exceptions.RPCTimeout(
        target='memagg-scheduler', method='allocate_remote', timeout=33)
    short = period(0, result(VM, 1500, 1200))
    lmc.plan_period(short, [dom(VM)])
    lmc.act(None)
    assert lmc.scheduler_api.calls == [
        ('allocate_remote', VM, 'node-a', 1024, 33)]
    # The next periods come before the retry is due: no hot loop.
    for _ in range(3):
        lmc.plan_period(short, [dom(VM)])
        lmc.act(None)
    assert len(lmc.scheduler_api.calls) == 1
    clock[0] += 60
    del lmc.scheduler_api.fail['allocate_remote']
    lmc.plan_period(short, [dom(VM)])
    lmc.act(None)
    assert len(lmc.scheduler_api.calls) == 2
    # Now it has a grant: nothing more is asked.
    lmc.plan_period(short, [dom(VM)])
    lmc.act(None)
    assert len(lmc.scheduler_api.calls) == 2


def test_excess_lent_memory_is_reclaimed(lmc):
    lmc.client.stats = donor(used_mb=512)
    lmc.plan_period(period(1024 + 100), [])
    lmc.act(None)
    assert lmc.scheduler_api.calls == [('reclaim', 'node-a', 412, 33)]


def test_a_gone_vm_is_released_and_its_export_dropped_after_two_periods(
        lmc):
    lmc.attach_grant(grant_dict())
    lmc.plan_period(period(0), [])
    lmc.act(None)
    assert lmc.scheduler_api.calls == []
    lmc.plan_period(period(0), [])
    lmc.act(None)
    assert lmc.scheduler_api.calls == [('release_grant', GRANT, 33)]
    assert ('export_drop', GRANT, True) in lmc.client.calls
    assert lmc.driver.detached == [(VM, 'memagg-swap-0b4f7e0c')]
    assert lmc.grants_by_instance() == {}


def test_a_gone_vm_whose_grant_moved_drops_its_export_only(lmc):
    lmc.attach_grant(grant_dict())
    lmc.scheduler_api.moved[GRANT] = 'node-b'
    for _ in range(2):
        lmc.plan_period(period(0), [])
        lmc.act(None)
    assert lmc.scheduler_api.release_hosts == ['node-a']
    assert ('export_drop', GRANT, True) in lmc.client.calls
    # The VM's definition is on its new host: nothing to detach here.
    assert lmc.driver.detached == []
    assert lmc.grants_by_instance() == {}


def test_an_adopted_grant_is_served_from_its_donors_without_hot_plug(lmc):
    local = remote_grants.local_copy_path(lmc.conf.swapd.state_dir, VM, GRANT)
    os.makedirs(os.path.dirname(local))
    with open(local, 'w') as stale:
        stale.write('an earlier attempt')

    reply = lmc.adopt_grant(grant_dict())

    assert reply == {'socket': '/run/exports/%s.sock' % GRANT,
                     'name': 'memagg-swap-' + GRANT}
    create = [c for c in lmc.client.calls if c[0] == 'export_create']
    assert [c[-1] for c in create] == ['adopt']
    assert [s['index'] for s in create[0][6]] == [0, 1]
    assert not os.path.exists(local), 'a stale copy must not be reused'
    assert lmc.driver.attached == []
    assert lmc.grants_by_instance()[VM].uuid == GRANT
    # Idempotent: asked again (a resumed migration), nothing is created.
    lmc.adopt_grant(grant_dict())
    assert len([c for c in lmc.client.calls
                if c[0] == 'export_create']) == 1
    assert lmc.grant_status(GRANT) == {'stored_mb': 10,
                                       'local_copy_left_mb': 2,
                                       'sealed': False}
    # The copy's rebuild waits for the migration's end.
    assert [c for c in lmc.client.calls if c[0] == 'export_rebuild'] == []
    assert lmc.rebuild_grant(GRANT) == {'local_copy_left_mb': 2}
    assert ('export_rebuild', GRANT) in lmc.client.calls


def test_attach_seals_the_pages_unless_encrypt_pages_is_off(conf, lmc):
    lmc.attach_grant(grant_dict())
    conf.config(encrypt_pages=False, group='swapd')
    lmc.attach_grant(grant_dict(uuid=GRANT2))
    create = [c for c in lmc.client.calls if c[0] == 'export_create']
    assert [c[1] for c in create] == [GRANT, GRANT2]
    assert create[0][-1] == 'seal' and 'seal' not in create[1]
    assert lmc.grant_status(GRANT)['sealed'] is True
    assert lmc.grant_status(GRANT2)['sealed'] is False


def test_a_sealed_grant_is_adopted_with_a_key_offer_and_gets_its_key(lmc):
    reply = lmc.adopt_grant(grant_dict(sealed=True))
    assert reply['key_offer'] == OFFER
    create = [c for c in lmc.client.calls if c[0] == 'export_create']
    assert create[0][-2:] == ('adopt', 'seal')
    # The offer went to a call that failed: adopted again, the export
    # still waiting for its key is made anew with a new offer.
    assert lmc.adopt_grant(grant_dict(sealed=True))['key_offer'] == OFFER
    assert ('export_drop', GRANT, True) in lmc.client.calls
    assert len([c for c in lmc.client.calls
                if c[0] == 'export_create']) == 2
    assert lmc.install_page_key(GRANT, 'ab' * 93) == {}
    # Once it has its key, asking again changes nothing.
    lmc.adopt_grant(grant_dict(sealed=True))
    assert len([c for c in lmc.client.calls
                if c[0] == 'export_create']) == 2


@pytest.mark.parametrize('field,call', [
    ('grant.sealed', lambda lmc: lmc.adopt_grant(grant_dict(sealed='yes'))),
    ('offer', lambda lmc: lmc.wrap_page_key(GRANT, 'zz' * 32)),
    ('offer', lambda lmc: lmc.wrap_page_key(GRANT, None)),
    ('wrapped', lambda lmc: lmc.install_page_key(GRANT, 'ab' * 92)),
    ('grant_uuid', lambda lmc: lmc.wrap_page_key('nope', OFFER)),
])
def test_page_key_calls_name_the_bad_field(lmc, field, call):
    with pytest.raises(exceptions.InvalidParameter) as caught:
        call(lmc)
    assert caught.value.kwargs['field'] == field


def test_a_wrapped_key_that_does_not_open_is_a_bad_parameter(lmc):
    lmc.adopt_grant(grant_dict(sealed=True))
    lmc.client.errors['export_key_install'] = swapd.SwapdError(
        'EBADMSG', 'the wrapped key does not open')
    with pytest.raises(exceptions.InvalidParameter) as caught:
        lmc.install_page_key(GRANT, 'ab' * 93)
    assert caught.value.kwargs['field'] == 'wrapped'
    assert 'adopt the grant again' in caught.value.kwargs['reason']


def test_wrap_page_key_needs_the_export(lmc):
    with pytest.raises(exceptions.NotFound):
        lmc.wrap_page_key(GRANT, OFFER)
    lmc.attach_grant(grant_dict())
    assert lmc.wrap_page_key(GRANT, OFFER) == {'wrapped': 'ab' * 93}


def test_drop_export_forgets_the_grant_without_releasing_it(lmc):
    lmc.adopt_grant(grant_dict())
    assert lmc.drop_export(GRANT) == {'dropped': True}
    assert lmc.drop_export(GRANT) == {'dropped': False}
    assert lmc.scheduler_api.calls == []
    assert lmc.grants_by_instance() == {}
    with pytest.raises(exceptions.NotFound):
        lmc.grant_status(GRANT)
    with pytest.raises(exceptions.NotFound):
        lmc.rebuild_grant(GRANT)
    with pytest.raises(exceptions.InvalidParameter) as caught:
        lmc.drop_export('not-a-uuid')
    assert caught.value.kwargs['field'] == 'grant_uuid'


def test_a_vm_missing_for_one_period_keeps_its_grant(lmc):
    lmc.attach_grant(grant_dict())
    lmc.plan_period(period(0), [])
    lmc.plan_period(period(0), [dom(VM)])
    lmc.plan_period(period(0), [])
    assert lmc.plan.release == []


def test_release_of_a_grant_the_scheduler_does_not_know_still_drops(lmc):
    lmc.attach_grant(grant_dict())
    lmc.scheduler_api.fail['release_grant'] = exceptions.NotFound(
        resource='grant', id=GRANT)
    for _ in range(2):
        lmc.plan_period(period(0), [])
    lmc.act(None)
    assert ('export_drop', GRANT, True) in lmc.client.calls


def test_a_failed_release_keeps_the_export_for_a_later_try(lmc, clock):
    lmc.attach_grant(grant_dict())
    lmc.scheduler_api.fail['release_grant'] = exceptions.ServiceUnavailable(
        reason='bus down')
    for _ in range(2):
        lmc.plan_period(period(0), [])
    lmc.act(None)
    assert GRANT in lmc.client.exports
    del lmc.scheduler_api.fail['release_grant']
    clock[0] += 60
    lmc.plan_period(period(0), [])
    lmc.act(None)
    assert GRANT not in lmc.client.exports


def test_prepare_slabs_asks_swapd_in_bytes_and_reports_partial(lmc):
    reply = lmc.prepare_slabs(GRANT, SECRET, 64, [0, 1, 2])
    assert lmc.client.calls[-1] == ('grant_alloc', GRANT, SECRET, 64 * MIB,
                                    [0, 1, 2])
    assert reply == {'endpoint': 'tcp://10.0.0.2:7450',
                     'slabs': [{'index': 0, 'remote_addr': 4096, 'rkey': 77},
                               {'index': 1, 'remote_addr': 8192,
                                'rkey': 77}]}


def test_prepare_slabs_out_of_memory_is_an_empty_list(lmc):
    lmc.client.errors['grant_alloc'] = swapd.SwapdError('ENOMEM',
                                                        'slabs: no capacity')
    assert lmc.prepare_slabs(GRANT, SECRET, 64, [0]) == {'endpoint': None,
                                                         'slabs': []}


@pytest.mark.parametrize('args, field', [
    ((GRANT, 'xyz', 64, [0]), 'secret'),
    ((GRANT, SECRET, 0, [0]), 'slab_size_mb'),
    ((GRANT, SECRET, 64, []), 'indexes'),
    ((GRANT, SECRET, 64, [-1]), 'indexes'),
    (('not-a-uuid', SECRET, 64, [0]), 'grant_uuid'),
])
def test_prepare_slabs_refuses_bad_arguments_naming_them(lmc, args, field):
    with pytest.raises(exceptions.InvalidParameter) as info:
        lmc.prepare_slabs(*args)
    assert "'%s'" % field in str(info.value)
    assert not lmc.client.calls


def test_prepare_slabs_without_swapd_is_service_unavailable(lmc):
    lmc.client.down = True
    with pytest.raises(exceptions.ServiceUnavailable) as info:
        lmc.prepare_slabs(GRANT, SECRET, 64, [0])
    assert 'node-a' in str(info.value)


def test_free_and_reclaim_slabs_of_unknown_grants_do_nothing(lmc):
    assert lmc.free_slabs(GRANT) == {'freed': 3}
    assert lmc.reclaim_slabs(GRANT, [1]) == {'reclaimed': 2}
    assert lmc.client.calls[-1] == ('export_reclaim', GRANT, [1])
    lmc.client.errors['grant_free'] = swapd.SwapdError('ENOENT', 'grant')
    lmc.client.errors['export_reclaim'] = swapd.SwapdError('ENOENT', 'grant')
    assert lmc.free_slabs(GRANT) == {'freed': 0}
    assert lmc.reclaim_slabs(GRANT) == {'reclaimed': 0}


def test_attach_grant_creates_the_export_and_hot_plugs_it(lmc, tmp_path):
    reply = lmc.attach_grant(grant_dict())
    local = str(tmp_path / 'state' / 'local' / VM / (GRANT + '.img'))
    create = [c for c in lmc.client.calls if c[0] == 'export_create'][0]
    assert create[1:6] == (GRANT, SECRET, 128 * MIB, 64 * MIB, local)
    assert [s['index'] for s in create[6]] == [0, 1]
    assert create[6][0] == {'index': 0, 'endpoint': 'tcp://h1:7450',
                            'remote_addr': 4096, 'rkey': 7}
    assert (tmp_path / 'state' / 'local' / VM).is_dir()
    assert lmc.driver.attached == [(VM, '/run/exports/%s.sock' % GRANT,
                                    'memagg-swap-' + GRANT,
                                    'memagg-swap-0b4f7e0c')]
    assert reply == {'socket': '/run/exports/%s.sock' % GRANT,
                     'serial': 'memagg-swap-0b4f7e0c', 'target_dev': 'vdb'}
    assert lmc.grants_by_instance()[VM].target_dev == 'vdb'


def test_attach_grant_asks_for_the_reconnect_delay(conf, lmc):
    assert conf.conf.swapd.reconnect_delay == 30    # the default
    conf.config(reconnect_delay=7, group='swapd')
    lmc.attach_grant(grant_dict())
    assert lmc.driver.reconnect_delays == [7]


def test_a_vm_paused_on_its_swap_disk_is_resumed_once_its_export_is_served(
        lmc):
    lmc.attach_grant(grant_dict())
    lmc.plan_period(period(0), [dom(VM)])
    lmc.driver.paused.add(VM)
    lmc.act(None)
    assert lmc.driver.resumed == [(VM, ['memagg-swap-0b4f7e0c'])]
    # memagg-swapd away, or back without the export: nothing to resume.
    lmc.client.down = True
    lmc.plan_period(period(0), [dom(VM)])
    lmc.act(None)
    lmc.client.down = False
    lmc.client.exports.clear()
    lmc.plan_period(period(0), [dom(VM)])
    lmc.act(None)
    assert lmc.driver.resumed == [(VM, ['memagg-swap-0b4f7e0c'])]
    assert ('export_list',) in lmc.client.calls[-3:]


def test_resume_paused_alone_finds_memagg_swapd_back(lmc):
    """A CI rehearsal's VM stayed paused for good: resume_paused, called
    alone while memagg-swapd restarted, saw it down, and skipped every
    later call until another step of the period asked memagg-swapd."""
    lmc.attach_grant(grant_dict())
    lmc.driver.paused.add(VM)
    lmc.client.down = True
    lmc.resume_paused()
    lmc.client.down = False
    lmc.resume_paused()
    assert lmc.driver.resumed == [(VM, ['memagg-swap-0b4f7e0c'])]
    assert not lmc._swapd_down


def test_attach_grant_again_reuses_the_export(lmc, tmp_path):
    lmc.attach_grant(grant_dict())
    reply = lmc.attach_grant(grant_dict())
    assert len([c for c in lmc.client.calls if c[0] == 'export_create']) == 1
    assert reply['socket'] == str(tmp_path / 'exports' / (GRANT + '.sock'))


def test_attach_grant_drops_its_export_when_the_hot_plug_fails(lmc):
    lmc.driver.attach_error = base.Unsupported('no hot-plug here')
    with pytest.raises(base.Unsupported):
        lmc.attach_grant(grant_dict())
    assert ('export_drop', GRANT, True) in lmc.client.calls
    assert lmc.grants_by_instance() == {}


@pytest.mark.parametrize('changes, field', [
    ({'secret': 'short'}, 'grant.secret'),
    ({'instance_uuid': 'x'}, 'grant.instance_uuid'),
    ({'slabs': []}, 'grant.slabs'),
    ({'slabs': [{'index': 0}]}, 'grant.slabs[0]'),
])
def test_attach_grant_refuses_a_bad_grant_naming_the_field(lmc, changes,
                                                           field):
    with pytest.raises(exceptions.InvalidParameter) as info:
        lmc.attach_grant(grant_dict(**changes))
    assert "'%s'" % field in str(info.value)


def test_disabled_host_lends_nothing_and_refuses_slabs(lmc, conf):
    conf.config(enabled=False, group='swapd')
    assert lmc.ghost_periods([dom(VM)]) == {}
    assert lmc.plan_period(period(5000), []) == 0
    with pytest.raises(exceptions.ServiceUnavailable) as info:
        lmc.prepare_slabs(GRANT, SECRET, 64, [0])
    assert 'enabled' in str(info.value)
    assert lmc.client.calls == []


# -- through the MemoryManager and the Collector -------------------------

def test_the_ghost_reaches_the_estimator_and_lendable_the_report(lmc, conf):
    conf.config(estimator='swap_ghost', group='wss')
    conf.config(reserved_host_memory_mb=0, group='compute')
    stats = {'actual': 1024 * 1024, 'available': 1024 * 1024,
             'usable': 512 * 1024}
    lmc.driver.domains[VM] = dom(VM, booked=1024, stats=stats)
    lmc.attach_grant(grant_dict())
    # 300 pages evicted, then the oldest swapped back in: D = 300 pages,
    # within the first 4 MiB bucket.
    lmc.client.events[GRANT] = ([('o', p) for p in range(300)]
                                + [('i', 0)])
    lmc.client.stats = donor(capacity_mb=100000)
    memory = memory_mod.MemoryManager(lmc.driver, conf.conf)
    collector = collector_mod.Collector(lmc.driver, 'node-a', memory, lmc)
    report = collector.run_period()
    [instance] = report.instances
    assert instance.wss_mb == 1024 + 4
    assert instance.estimator.startswith('swap_ghost')
    # The VM is short (WSS above its maximum): nothing lendable.
    assert report.lendable_mb == 0
    assert lmc.plan.allocate == []      # it has a grant already


def test_no_donor_stats_still_lets_a_short_vm_ask_but_not_without_swapd(
        lmc):
    short = period(0, result(VM, 1500, 1200))
    lmc.client.errors['donor_stats'] = swapd.SwapdError('ENODEV', 'verb')
    lmc.plan_period(short, [dom(VM)])
    assert lmc.plan.allocate == [(VM, 1024)] and lmc.lendable_mb == 0
    lmc.client.down = True
    lmc.plan_period(short, [dom(VM)])
    assert lmc.plan.allocate == []


# -- remote limits through RemoteMemory ([reservoir] remote_budget) -------

def test_the_fixed_plug_in_is_the_default(lmc):
    assert lmc.remote_budget.name == 'fixed'


def test_a_bad_remote_budget_fails_at_start_naming_the_option(conf, lmc):
    conf.config(remote_budget='tcp', group='reservoir')
    with pytest.raises(exceptions.InvalidParameter) as info:
        remote.RemoteMemory(Driver(), 'node-a', conf.conf, FakeScheduler(),
                            client=FakeSwapd())
    assert info.value.kwargs['field'] == '[reservoir] remote_budget'


def test_tlp_limits_follow_swap_ins_and_slack_over_periods(tlp_lmc):
    lmc = tlp_lmc
    short = period(0, result(VM, 1500, 1200))
    calm = period(0, result(VM, 900, 1000, shortage=False))
    # Period 1: short, nothing held, budget 1024 (its cap): 0 + 20.48 ->
    # 20, asked for; the grant of 20 MiB is held from then on.
    lmc.ghost_periods([dom(VM)])
    lmc.plan_period(short, [dom(VM)])
    lmc.act(None)
    assert lmc.scheduler_api.calls == [('allocate_remote', VM, 'node-a', 20,
                                        33)]
    # Period 2: not short, but its export served swap-ins (one matched,
    # one never seen evicted): 20 + 20.48 -> 40. Not short: nothing asked.
    lmc.client.events[GRANT] = [('o', 1), ('i', 1), ('i', 7)]
    lmc.ghost_periods([dom(VM)])
    lmc.plan_period(calm, [dom(VM)])
    lmc.act(None)
    assert lmc.plan.limits == {VM: 40}
    assert len(lmc.scheduler_api.calls) == 1
    # Period 3: no swap-ins; slack 40 - 20 = 20 above 0.25 x 40 = 10:
    # 40 - 0.8 -> 39.
    lmc.ghost_periods([dom(VM)])
    lmc.plan_period(calm, [dom(VM)])
    assert lmc.plan.limits == {VM: 39}
    # Period 4: short again: 39 + 20.48 -> 59; it holds 20, asks for 39.
    lmc.ghost_periods([dom(VM)])
    lmc.plan_period(short, [dom(VM)])
    lmc.act(None)
    assert lmc.scheduler_api.calls[-1] == ('allocate_remote', VM, 'node-a',
                                           39, 33)
    # Gone: its limit is forgotten.
    lmc.plan_period(period(0), [])
    assert lmc.plan.limits == {}


def test_what_a_vm_holds_follows_attach_reclaim_and_recovery(tlp_lmc):
    lmc = tlp_lmc
    calm = period(0, result(VM, 900, 1000, shortage=False))
    # Two slabs of 64 MiB on donors: new to the policy, its limit is its
    # use, 128.
    lmc.attach_grant(grant_dict())
    lmc.plan_period(calm, [dom(VM)])
    assert lmc.plan.limits == {VM: 128}
    # Both slabs reclaimed to the local copy: it holds nothing remotely;
    # slack 128 above 32: 128 - 2.56 -> 125.
    lmc.reclaim_slabs(GRANT, [0, 1])
    lmc.plan_period(calm, [dom(VM)])
    assert lmc.plan.limits == {VM: 125}
    # A restarted memagg-compute finds the grant's slabs in its export:
    # slab 1 of 0-2 is served locally, two on donors, 128 MiB.
    lmc.client.exports = {GRANT: {
        'local': remote_grants.local_copy_path('/s', VM, GRANT),
        'slab_size': 64 * MIB,
        'slabs': [{'index': i} for i in range(3)], 'local_slabs': [1]}}
    restarted = remote.RemoteMemory(Driver(), 'node-a', lmc.conf,
                                    FakeScheduler(), client=lmc.client)
    restarted.recover()
    restarted.plan_period(calm, [dom(VM)])
    assert restarted.plan.limits == {VM: 128}
