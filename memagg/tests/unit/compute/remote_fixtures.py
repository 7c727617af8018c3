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

"""What the RemoteMemory tests share (test_remote.py,
test_remote_exports.py, test_remote_plan.py, test_remote_grants.py,
test_manager.py): RemoteMemory with its boundaries replaced.

memagg-swapd is replaced at its boundary by FakeSwapd, an in-test object
with SwapdClient's methods (the client itself is tested against a socket
in test_swapd.py and against the real daemon in
memagg/tests/functional/test_compute_remote_swapd.py); memagg-scheduler by
an object with SchedulerAPI's three remote-memory calls; the hypervisor by
a small HypervisorDriver.
"""
from memagg.compute import memory as memory_mod
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


#: EXPORT_STATS' ledger of FakeSwapd's exports: 2560 pages written, 2048
#: of them on donors, the rest demoted.
LEDGER = dict(l1_puts=2560, l1_gets=900, l1_flushes=0, l1_moved_in=0,
              l1_moved_out=512, l1_evicts=0, l1_used=2048, l2_puts=0,
              l2_gets=40, l2_flushes=0, l2_moved_in=512, l2_moved_out=0,
              l2_evicts=0, l2_used=512)


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
        return dict(LEDGER, reads=5, stored_pages=2560, rebuild_left=257,
                    sealed=int(self.exports[grant]['sealed']),
                    key_pending=int(self.exports[grant]['key_pending']),
                    stale_slabs=len(self.exports[grant].get('stale_slabs',
                                                            ())))

    def export_rebuild(self, grant):
        self._call('export_rebuild', grant)
        if grant not in self.exports:
            raise swapd.SwapdError('ENOENT', 'grant %s: no export' % grant)
        return {'rebuild_left': 257}

    def export_reclaim(self, grant, slabs=None):
        self._call('export_reclaim', grant, slabs)
        return 2

    def export_promote(self, grant, slab):
        self._call('export_promote', grant, slab)
        if grant not in self.exports:
            raise swapd.SwapdError('ENOENT', 'grant %s: no export' % grant)
        return 16384

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

    def move_slabs(self, ctxt, grant_uuid, consumer_host, demote, promote):
        self._call('move_slabs', grant_uuid, consumer_host, list(demote),
                   list(promote))


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
