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

"""A stand-in for memagg-compute's RPC client (memagg.compute.rpcapi
ComputeAPI) at the boundary the reservoir and the migration executor call:
prepare_slabs, free_slabs, attach_grant and reclaim_slabs (1.1),
adopt_grant, drop_export, grant_status and migration_stats (1.2), and
rebuild_grant (1.3), wrap_page_key and install_page_key (1.4),
promote_slab (1.5), with the contract's arguments and replies. Each donor
host keeps the slabs it set up and each consumer its exports, so a test
can see that nothing leaked."""
import threading

import oslo_messaging as messaging

from memagg.common import exceptions


class ComputeDouble:
    """``behaviour`` maps a host to how it answers prepare_slabs: ``ok``
    (every slab), an int (that many slabs: out of memory), ``fail``
    (RPCTimeout) or ``malformed`` (a reply without slabs).
    ``attach_fails`` / ``reclaim_fails`` / ``adopt_fails`` /
    ``promote_fails`` are sets of hosts whose attach_grant /
    reclaim_slabs / adopt_grant / promote_slab raise; consumers in
    ``reclaim_refuses`` refuse reclaim_slabs (Conflict). A consumer keeps
    the slabs it copied to donors in ``promoted`` ({host: {(grant uuid,
    index): (endpoint, remote_addr)}}).
    ``stored_mb`` and ``copy_left_mb`` map a grant to what grant_status
    and rebuild_grant answer (``copy_left_mb`` a list: one answer per
    call, the last repeated); ``stats`` maps a host to its
    migration_stats reply. Grants are sealed unless ``unsealed`` holds
    them; a host keeps the page keys it holds in ``page_keys``."""

    def __init__(self, behaviour=None):
        self.behaviour = dict(behaviour or {})
        self.attach_fails = set()
        self.reclaim_fails = set()
        self.reclaim_refuses = set()
        self.free_fails = set()
        self.calls = []
        self.held = {}      # host -> {(grant, index)}
        self.attached = {}  # grant uuid -> grant dict
        self.adopt_fails = set()
        self.promote_fails = set()
        self.promoted = {}
        self.exports = {}   # host -> {grant uuid}
        self.stored_mb = {}
        self.copy_left_mb = {}
        self.stats = {}
        self.unsealed = set()
        self.page_keys = {}     # host -> {grant uuid: key}
        self.offers = {}        # (host, grant uuid) -> key offer
        self.hook = None    # called with (method, host) before answering
        self._lock = threading.Lock()

    def _record(self, method, host, *args, timeout=None):
        assert timeout is not None, 'calls to a host must be bounded'
        with self._lock:
            self.calls.append((method, host) + args)
        if self.hook is not None:
            self.hook(method, host)

    def _timeout(self, method, host):
        raise exceptions.RPCTimeout(target='memagg-compute.%s' % host,
                                    method=method, timeout=30)

    def prepare_slabs(self, ctxt, host, grant_uuid, secret, slab_size_mb,
                      indexes, timeout=None):
        self._record('prepare_slabs', host, grant_uuid, slab_size_mb,
                     list(indexes), timeout=timeout)
        assert len(secret) == 64 and int(secret, 16) >= 0
        how = self.behaviour.get(host, 'ok')
        if how == 'fail':
            self._timeout('prepare_slabs', host)
        if how == 'malformed':
            return {'endpoint': 'tcp://%s:7450' % host}
        given = list(indexes) if how == 'ok' else list(indexes)[:how]
        with self._lock:
            self.held.setdefault(host, set()).update(
                (grant_uuid, i) for i in given)
        return {'endpoint': 'tcp://%s:7450' % host,
                'slabs': [{'index': i, 'remote_addr': 0x10000000 * (i + 1),
                           'rkey': 1000 + i} for i in given]}

    def free_slabs(self, ctxt, host, grant_uuid, indexes=None,
                   timeout=None):
        self._record('free_slabs', host, grant_uuid,
                     None if indexes is None else list(indexes),
                     timeout=timeout)
        if host in self.free_fails:
            self._timeout('free_slabs', host)
        with self._lock:
            mine = self.held.get(host, set())
            gone = {(g, i) for g, i in mine if g == grant_uuid
                    and (indexes is None or i in indexes)}
            mine -= gone
        return {'freed': len(gone)}

    def attach_grant(self, ctxt, host, grant, timeout=None):
        self._record('attach_grant', host, grant['uuid'], timeout=timeout)
        if host in self.attach_fails:
            raise exceptions.ServiceUnavailable(reason='libvirt is down')
        self.attached[grant['uuid']] = grant
        with self._lock:
            self.exports.setdefault(host, set()).add(grant['uuid'])
        return {'socket': '/run/memagg/swapd/exports/%s.sock'
                % grant['uuid'],
                'serial': 'memagg-swap-' + grant['uuid'][:8],
                'target_dev': 'vdb'}

    def reclaim_slabs(self, ctxt, host, grant_uuid, indexes=None,
                      timeout=None):
        self._record('reclaim_slabs', host, grant_uuid,
                     None if indexes is None else list(indexes),
                     timeout=timeout)
        if host in self.reclaim_fails:
            self._timeout('reclaim_slabs', host)
        if host in self.reclaim_refuses:
            # What oslo.messaging hands over of the Conflict memagg-compute
            # raises when memagg-swapd refuses (EBUSY).
            raise messaging.RemoteError(
                'Conflict', 'slabs: slab 1 is stale in the local copy')
        return {'reclaimed': len(indexes or [])}

    def promote_slab(self, ctxt, host, grant_uuid, slab, timeout=None):
        self._record('promote_slab', host, grant_uuid, slab['index'],
                     timeout=timeout)
        if host in self.promote_fails:
            self._timeout('promote_slab', host)
        where = (slab['endpoint'], slab['remote_addr'])
        with self._lock:
            mine = self.promoted.setdefault(host, {})
            again = mine.get((grant_uuid, slab['index'])) == where
            mine[(grant_uuid, slab['index'])] = where
        return {'pages': 0 if again else 16384}

    def holding(self, host=None):
        """Slabs set up and not freed, on ``host`` or everywhere."""
        with self._lock:
            if host is not None:
                return set(self.held.get(host, set()))
            return set().union(*self.held.values()) if self.held else set()

    def called(self, method):
        return [c[1:] for c in self.calls if c[0] == method]

    def adopt_grant(self, ctxt, host, grant, timeout=None):
        self._record('adopt_grant', host, grant['uuid'], timeout=timeout)
        assert len(grant['secret']) == 64 and grant['slabs']
        if host in self.adopt_fails:
            raise exceptions.ServiceUnavailable(
                reason='memagg-swapd of %s does not answer' % host)
        assert isinstance(grant['sealed'], bool)
        reply = {'socket': '/run/memagg/swapd/exports/%s.sock'
                 % grant['uuid'], 'name': 'memagg-swap-' + grant['uuid']}
        with self._lock:
            self.exports.setdefault(host, set()).add(grant['uuid'])
            if grant['sealed']:
                offer = '%064x' % len(self.offers)
                self.offers[(host, grant['uuid'])] = offer
                reply['key_offer'] = offer
        return reply

    def _page_key(self, host, grant_uuid):
        # Each grant's key is made where its export was first created.
        return self.page_keys.setdefault(host, {}).get(
            grant_uuid, 'key-of-' + grant_uuid)

    def wrap_page_key(self, ctxt, host, grant_uuid, offer, timeout=None):
        self._record('wrap_page_key', host, grant_uuid, timeout=timeout)
        return {'wrapped': '%s:%s' % (offer,
                                      self._page_key(host, grant_uuid))}

    def install_page_key(self, ctxt, host, grant_uuid, wrapped,
                         timeout=None):
        self._record('install_page_key', host, grant_uuid, timeout=timeout)
        offer, key = wrapped.split(':', 1)
        with self._lock:
            if self.offers.pop((host, grant_uuid), None) != offer:
                raise exceptions.InvalidParameter(
                    field='wrapped', reason='does not open')
            self.page_keys.setdefault(host, {})[grant_uuid] = key
        return {}

    def drop_export(self, ctxt, host, grant_uuid, timeout=None):
        self._record('drop_export', host, grant_uuid, timeout=timeout)
        with self._lock:
            mine = self.exports.get(host, set())
            dropped = grant_uuid in mine
            mine.discard(grant_uuid)
        return {'dropped': dropped}

    def _copy_left(self, host, grant_uuid):
        with self._lock:
            if grant_uuid not in self.exports.get(host, set()):
                raise exceptions.NotFound(resource='Export', id=grant_uuid)
            answers = self.copy_left_mb.get(grant_uuid, [0])
            return answers.pop(0) if len(answers) > 1 else answers[0]

    def grant_status(self, ctxt, host, grant_uuid, timeout=None):
        self._record('grant_status', host, grant_uuid, timeout=timeout)
        return {'stored_mb': self.stored_mb.get(grant_uuid, 0),
                'local_copy_left_mb': self._copy_left(host, grant_uuid),
                'sealed': grant_uuid not in self.unsealed}

    def rebuild_grant(self, ctxt, host, grant_uuid, timeout=None):
        self._record('rebuild_grant', host, grant_uuid, timeout=timeout)
        return {'local_copy_left_mb': self._copy_left(host, grant_uuid)}

    def migration_stats(self, ctxt, host, instance_uuid, timeout=None):
        self._record('migration_stats', host, instance_uuid,
                     timeout=timeout)
        return self.stats.get(host)

    def exported(self, host):
        """The grants ``host`` serves an export of."""
        with self._lock:
            return set(self.exports.get(host, set()))
