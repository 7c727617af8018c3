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

"""memagg-scheduler's calls back on this host's remote memory (the compute
RPC API 1.1 and 1.2), answered by RemoteMemory (memagg.compute.remote):
the slabs this host lends as a donor (prepare_slabs, free_slabs) and, as
the consumer, the exports of its VMs' grants (attach_grant, adopt_grant,
reclaim_slabs, the page keys of a live migration, drop_export,
rebuild_grant, grant_status).
"""
import os
import re

from oslo_log import log as logging

from memagg.common import exceptions
from memagg.compute import remote_grants
from memagg.compute import swapd
from memagg.drivers.hypervisor import base as hypervisor

LOG = logging.getLogger(__name__)

# Slab states whose slabs do not hold the grant's pages on a donor (no
# longer, or, promoting, not yet).
_ENDED_SLABS = frozenset(('released', 'reclaimed', 'failed', 'freed',
                          'promoting'))
# Slab states of slabs gone from the grant: the others are on a donor or
# in the local copy only (reclaimed, promoting: the local tier).
_GONE_SLABS = frozenset(('released', 'failed', 'freed'))

_HEX64 = re.compile(r'^[0-9a-fA-F]{64}$')
# A wrapped page key: native/swapd/keywrap.h's SD_KW_BLOB_LEN bytes.
WRAPPED_HEX_LEN = 186
_HEX_WRAPPED = re.compile(r'^[0-9a-fA-F]{%d}$' % WRAPPED_HEX_LEN)


class ExportsMixin:
    """RemoteMemory's answers to memagg-scheduler, kept apart from its
    periodic side; they use its driver, host, conf, client, backoff,
    enabled, _down and _up. They run on RPC threads while the periodic
    thread may be waiting on the scheduler: the state they share with it
    (_grants, _missing) is behind its _lock."""

    def _check_enabled(self):
        if not self.enabled:
            raise exceptions.ServiceUnavailable(
                reason='remote memory is disabled on %s ([swapd] enabled '
                       '= False)' % self.host)

    def _check_manages(self, what):
        """Conflict naming ``what`` in observe mode ([compute] mode), where
        this host sets up no grant."""
        if self.observe:
            raise exceptions.Conflict(
                reason='%s refused: memagg-compute on %s runs with '
                       '[compute] mode = observe and changes nothing'
                       % (what, self.host))

    def _swapd(self, func, *args, **kwargs):
        """func(...) of the SwapdClient, its unavailability as
        ServiceUnavailable and EINVAL as InvalidParameter."""
        try:
            result = func(*args, **kwargs)
        except swapd.SwapdUnavailable as exc:
            self._down(exc)
            raise exceptions.ServiceUnavailable(
                reason='memagg-swapd of %s does not answer: %s'
                % (self.host, exc))
        except swapd.SwapdError as exc:
            if exc.errno_name == 'EINVAL':
                field = exc.message.split(':', 1)[0]
                raise exceptions.InvalidParameter(field=field,
                                                  reason=exc.message)
            raise
        self._up()
        return result

    def prepare_slabs(self, grant_uuid, secret, slab_size_mb, indexes):
        """Allocate donated slabs ``indexes`` of ``slab_size_mb`` MiB for
        grant ``grant_uuid`` keyed by ``secret`` (64 hex): {endpoint,
        slabs: [{index, remote_addr, rkey}]}, only those allocated (fewer:
        partial; none: out of memory). Conflict in observe mode."""
        self._check_enabled()
        self._check_manages('Lending slabs of grant %s' % grant_uuid)
        remote_grants.check_uuid('grant_uuid', grant_uuid)
        if not isinstance(secret, str) or not _HEX64.match(secret):
            raise exceptions.InvalidParameter(
                field='secret', reason='must be 64 hexadecimal digits')
        if (not isinstance(slab_size_mb, int) or isinstance(slab_size_mb,
                                                            bool)
                or slab_size_mb <= 0):
            raise exceptions.InvalidParameter(
                field='slab_size_mb',
                reason='%r is not a positive integer' % (slab_size_mb,))
        indexes = _check_indexes('indexes', indexes, allow_none=False)
        try:
            reply = self._swapd(self.client.grant_alloc, grant_uuid, secret,
                                slab_size_mb * remote_grants.MIB, indexes)
        except swapd.SwapdError as exc:
            if exc.errno_name != 'ENOMEM':
                raise
            LOG.warning('Grant %s: no slab of %d could be lent: %s',
                        grant_uuid, len(indexes), exc.message)
            return {'endpoint': None, 'slabs': []}
        slabs = [{'index': s['index'], 'remote_addr': s['remote_addr'],
                  'rkey': reply['rkey']} for s in reply['slabs']]
        LOG.info('Grant %s: lent %d of %d slabs of %d MiB at %s',
                 grant_uuid, len(slabs), len(indexes), slab_size_mb,
                 reply['endpoint'])
        return {'endpoint': reply['endpoint'], 'slabs': slabs}

    def free_slabs(self, grant_uuid, indexes=None):
        """Free donated slabs of ``grant_uuid`` (all when None): {freed}.
        An unknown grant frees nothing."""
        self._check_enabled()
        remote_grants.check_uuid('grant_uuid', grant_uuid)
        indexes = _check_indexes('indexes', indexes)
        try:
            freed = self._swapd(self.client.grant_free, grant_uuid, indexes)
        except swapd.SwapdError as exc:
            if exc.errno_name != 'ENOENT':
                raise
            freed = 0
        return {'freed': freed}

    def reclaim_slabs(self, grant_uuid, indexes=None):
        """Serve slabs ``indexes`` (all when None) of this host's export
        of ``grant_uuid`` from its local copy from now on: {reclaimed}.
        An unknown export reclaims nothing; Conflict when a slab's local
        copy lacks pages only its donor has (a stale slab, or an adopted
        export's not rebuilt yet): its donor must keep it."""
        self._check_enabled()
        remote_grants.check_uuid('grant_uuid', grant_uuid)
        indexes = _check_indexes('indexes', indexes)
        try:
            reclaimed = self._swapd(self.client.export_reclaim, grant_uuid,
                                    indexes)
        except swapd.SwapdError as exc:
            if exc.errno_name == 'EBUSY':
                raise exceptions.Conflict(reason=exc.message)
            if exc.errno_name != 'ENOENT':
                raise
            reclaimed = 0
        with self._lock:
            grant = self._grants.get(grant_uuid)
            if grant is not None:
                # What memagg-swapd reclaims now was on a donor until now.
                grant.remote_mb = max(
                    0, grant.remote_mb - reclaimed * grant.slab_size_mb)
        return {'reclaimed': reclaimed}

    def promote_slab(self, grant_uuid, slab):
        """Copy slab ``slab`` ({index, endpoint, remote_addr}) of this
        host's export of ``grant_uuid``, served from its local copy, to
        the donor that prepared it, while the VM runs: {pages} copied.
        A slab already on that donor (a promotion asked again) copies
        nothing; NotFound without an export, Conflict when the slab is on
        another donor."""
        self._check_enabled()
        self._check_manages('Promoting a slab of grant %s' % grant_uuid)
        remote_grants.check_uuid('grant_uuid', grant_uuid)
        try:
            wanted = {'index': int(slab['index']),
                      'endpoint': str(slab['endpoint']),
                      'remote_addr': int(slab['remote_addr'])}
        except (KeyError, TypeError, ValueError) as exc:
            raise exceptions.InvalidParameter(
                field='slab', reason='needs index, endpoint and remote_addr '
                                     '(%s)' % exc)
        try:
            pages = self._on_export(
                lambda uuid: self.client.export_promote(uuid, wanted),
                grant_uuid)
        except swapd.SwapdError as exc:
            if exc.errno_name != 'EALREADY':
                raise
            described = self._on_export(self.client.export_describe,
                                        grant_uuid)
            there = [s for s in described.get('slabs', ())
                     if s['index'] == wanted['index']]
            if not there or (there[0]['endpoint'], there[0]['remote_addr']) \
                    != (wanted['endpoint'], wanted['remote_addr']):
                raise exceptions.Conflict(reason=(
                    'slab %d of grant %s is on another donor: %s'
                    % (wanted['index'], grant_uuid, exc.message)))
            pages = 0
        with self._lock:
            grant = self._grants.get(grant_uuid)
            if grant is not None and pages:
                grant.remote_mb += grant.slab_size_mb
        LOG.info('Grant %s: slab %d promoted to %s (%d pages copied)',
                 grant_uuid, wanted['index'], wanted['endpoint'], pages)
        return {'pages': pages}

    def attach_grant(self, grant):
        """Create grant ``grant``'s export (dict of the Scheduler API) and
        hot-plug it into its VM: {socket, serial, target_dev}. Idempotent:
        an export or disk already there is reused. When the hot-plug
        fails, an export made by this call is dropped again and the error
        raised. Conflict in observe mode."""
        self._check_enabled()
        uuid, instance, key, slab_size_mb, slabs, count = _grant_fields(
            grant)
        self._check_manages('Attaching grant %s' % uuid)
        swapd_conf = self.conf.swapd
        serial = hypervisor.swap_serial(uuid)
        local = remote_grants.local_copy_path(swapd_conf.state_dir, instance,
                                              uuid)
        try:
            os.makedirs(os.path.dirname(local), exist_ok=True)
        except OSError as exc:
            raise exceptions.ServiceUnavailable(
                reason='cannot make the local copy\'s directory %s: %s; '
                       'check [swapd] state_dir' % (os.path.dirname(local),
                                                    exc))
        created = False
        if uuid in self._swapd(self.client.export_list):
            export = self._existing_export(uuid)
        else:
            # Slabs in the local tier are those the export does not list.
            size = count * slab_size_mb * remote_grants.MIB
            try:
                export = self._swapd(self.client.export_create, uuid, key,
                                     size, slab_size_mb * remote_grants.MIB,
                                     local, slabs,
                                     seal=swapd_conf.encrypt_pages)
                created = True
            except swapd.SwapdError as exc:
                if exc.errno_name != 'EEXIST':
                    raise
                export = self._existing_export(uuid)
        try:
            target = self.driver.attach_swap_disk(
                instance, export['socket'], export['name'], serial,
                reconnect_delay=swapd_conf.reconnect_delay)
        except Exception:
            if created:
                LOG.warning('Grant %s: hot-plug into VM %s failed; dropping '
                            'the export just made', uuid, instance)
                try:
                    self.client.export_drop(uuid, delete=True)
                except (swapd.SwapdError, swapd.SwapdUnavailable) as exc:
                    LOG.warning('Export of grant %s not dropped: %s', uuid,
                                exc)
            raise
        with self._lock:
            self._grants[uuid] = remote_grants.Grant(
                uuid=uuid, instance_uuid=instance, socket=export['socket'],
                serial=serial, target_dev=target,
                remote_mb=len(slabs) * slab_size_mb,
                size_mb=count * slab_size_mb, slab_size_mb=slab_size_mb)
            self._missing.pop(uuid, None)
        self.backoff.succeeded(('allocate', instance))
        LOG.info('Grant %s of VM %s attached as %s (%d slabs, %d of them '
                 'in the local tier, NBD %s)', uuid, instance, target, count,
                 count - len(slabs), export['socket'])
        return {'socket': export['socket'], 'serial': serial,
                'target_dev': target}

    def adopt_grant(self, grant):
        """Serve grant ``grant``'s export (the grant dict, secret and
        slabs included) for its VM migrating to this host, without
        hot-plugging: the disk comes with the VM. memagg-swapd reads every
        page from the donors; the local copy is rebuilt only once the
        migration is over (rebuild_grant), so that the rebuild does not
        compete with the migration's copy (ALGORITHMS.md §5). Idempotent.
        Returns {socket, name}; a sealed grant (the dict's ``sealed``, as
        the source's grant_status says) adds key_offer, the public key the
        source's wrap_page_key seals the page key for."""
        self._check_enabled()
        uuid, instance, key, slab_size_mb, slabs, count = _grant_fields(
            grant)
        if len(slabs) < count:
            raise exceptions.InvalidParameter(
                field='grant.slabs', reason='an adopted grant has every slab '
                'on a donor; %d of %d are in the local tier' % (
                    count - len(slabs), count))
        sealed = grant.get('sealed', False)
        if not isinstance(sealed, bool):
            raise exceptions.InvalidParameter(field='grant.sealed',
                                              reason='must be true or false')
        local = remote_grants.local_copy_path(self.conf.swapd.state_dir,
                                              instance, uuid)
        exists = uuid in self._swapd(self.client.export_list)
        if exists and sealed and self._key_pending(uuid):
            # Its key offer went to a call that failed; no guest uses an
            # export still waiting for its key, so a new one replaces it.
            self._swapd(self.client.export_drop, uuid, delete=True)
            exists = False
        if exists:
            export = self._existing_export(uuid)
        else:
            try:
                os.makedirs(os.path.dirname(local), exist_ok=True)
                # A copy left by an earlier attempt would pass for pages
                # written here.
                if os.path.exists(local):
                    os.unlink(local)
            except OSError as exc:
                raise exceptions.ServiceUnavailable(
                    reason='cannot prepare the local copy %s: %s; check '
                           '[swapd] state_dir' % (local, exc))
            size = ((max(s['index'] for s in slabs) + 1) * slab_size_mb
                    * remote_grants.MIB)
            try:
                export = self._swapd(self.client.export_create, uuid, key,
                                     size, slab_size_mb * remote_grants.MIB,
                                     local, slabs, adopt=True, seal=sealed)
            except swapd.SwapdError as exc:
                if exc.errno_name != 'EEXIST':
                    raise
                export = self._existing_export(uuid)
        with self._lock:
            self._grants[uuid] = remote_grants.Grant(
                uuid=uuid, instance_uuid=instance, socket=export['socket'],
                serial=hypervisor.swap_serial(uuid),
                remote_mb=len(slabs) * slab_size_mb,
                size_mb=len(slabs) * slab_size_mb,
                slab_size_mb=slab_size_mb)
            self._missing.pop(uuid, None)
        LOG.info('Grant %s of VM %s adopted for its live migration (%d '
                 'slabs, NBD %s)', uuid, instance, len(slabs),
                 export['socket'])
        return export

    def _key_pending(self, uuid):
        return bool(self._swapd(self.client.export_stats,
                                uuid).get('key_pending', 0))

    def wrap_page_key(self, grant_uuid, offer):
        """Grant ``grant_uuid``'s page key sealed for ``offer`` (the key
        offer of the host its VM migrates to): {wrapped}. NotFound
        without an export."""
        if not isinstance(offer, str) or not _HEX64.match(offer):
            raise exceptions.InvalidParameter(
                field='offer', reason='must be 64 hexadecimal digits (the '
                                      'destination\'s key_offer)')
        wrapped = self._on_export(
            lambda uuid: self.client.export_key_wrap(uuid, offer),
            grant_uuid)
        return {'wrapped': wrapped}

    def install_page_key(self, grant_uuid, wrapped):
        """Keep the page key ``wrapped`` (from the migration source's
        wrap_page_key) for this host's adopted export of ``grant_uuid``:
        {}. NotFound without an export; InvalidParameter when it does not
        open with this export's key offer."""
        if not isinstance(wrapped, str) or not _HEX_WRAPPED.match(wrapped):
            raise exceptions.InvalidParameter(
                field='wrapped', reason='must be %d hexadecimal digits (the '
                                        'source\'s wrap_page_key)'
                                        % WRAPPED_HEX_LEN)
        try:
            self._on_export(
                lambda uuid: self.client.export_key_install(uuid, wrapped),
                grant_uuid)
        except swapd.SwapdError as exc:
            if exc.errno_name != 'EBADMSG':
                raise
            raise exceptions.InvalidParameter(
                field='wrapped', reason='does not open with this host\'s key '
                                        'offer for grant %s; adopt the '
                                        'grant again' % grant_uuid)
        return {}

    def drop_export(self, grant_uuid):
        """Drop this host's export of ``grant_uuid`` and its local copy
        without releasing the grant: its VM lives on another host now, or
        never arrived here. Returns {dropped}."""
        self._check_enabled()
        remote_grants.check_uuid('grant_uuid', grant_uuid)
        try:
            self._swapd(self.client.export_drop, grant_uuid, delete=True)
            dropped = True
        except swapd.SwapdError as exc:
            if exc.errno_name != 'ENOENT':
                raise
            dropped = False
        with self._lock:
            self._grants.pop(grant_uuid, None)
            self._missing.pop(grant_uuid, None)
        return {'dropped': dropped}

    def rebuild_grant(self, grant_uuid):
        """Start rebuilding the local copy of an adopted grant whose VM's
        migration to this host is over. Idempotent (a rebuild running or
        done, or an export that was never adopted, is left as it is).
        Returns {local_copy_left_mb}; NotFound without an export."""
        reply = self._on_export(self.client.export_rebuild, grant_uuid)
        return {'local_copy_left_mb': _pages_mb(reply.get('rebuild_left',
                                                          0))}

    def grant_status(self, grant_uuid):
        """What this host's export of ``grant_uuid`` holds: {stored_mb
        (pages written, on the donors), local_copy_left_mb (durability
        copy still to rebuild), sealed (its pages encrypted with a page
        key only this host has)}. NotFound without an export."""
        stats = self._on_export(self.client.export_stats, grant_uuid)
        return {'stored_mb': _pages_mb(stats.get('stored_pages', 0)),
                'local_copy_left_mb': _pages_mb(stats.get('rebuild_left',
                                                          0)),
                'sealed': bool(stats.get('sealed', 0))}

    def _on_export(self, call, grant_uuid):
        """memagg-swapd's ``call`` on this host's export of
        ``grant_uuid``; NotFound without one."""
        self._check_enabled()
        remote_grants.check_uuid('grant_uuid', grant_uuid)
        try:
            return self._swapd(call, grant_uuid)
        except swapd.SwapdError as exc:
            if exc.errno_name == 'ENOENT':
                raise exceptions.NotFound(resource='Export', id=grant_uuid)
            raise

    def _existing_export(self, uuid):
        return {'name': 'memagg-swap-%s' % uuid,
                'socket': os.path.join(self.conf.swapd.export_dir,
                                       '%s.sock' % uuid)}


def _check_indexes(field, indexes, allow_none=True):
    if indexes is None and allow_none:
        return None
    if (not isinstance(indexes, (list, tuple)) or not indexes
            or not all(isinstance(i, int) and not isinstance(i, bool)
                       and i >= 0 for i in indexes)):
        raise exceptions.InvalidParameter(
            field=field, reason='%r is not a non-empty list of slab '
                                'indexes (integers >= 0)' % (indexes,))
    return list(indexes)


def _pages_mb(pages):
    """MiB of ``pages`` 4 KiB pages, rounded up."""
    return -(-int(pages) * 4096 // remote_grants.MIB)


def _grant_fields(grant):
    """(uuid, instance uuid, secret, slab_size_mb, slabs, count) of a grant
    dict: its slabs still on donors sorted by index, and how many slabs it
    has, those in the local tier too; InvalidParameter naming the field
    that is wrong."""
    if not isinstance(grant, dict):
        raise exceptions.InvalidParameter(field='grant',
                                          reason='must be a grant dict')
    for field in ('uuid', 'instance_uuid', 'secret', 'slab_size_mb',
                  'slabs'):
        if field not in grant:
            raise exceptions.InvalidParameter(
                field='grant.%s' % field, reason='missing')
    remote_grants.check_uuid('grant.uuid', grant['uuid'])
    remote_grants.check_uuid('grant.instance_uuid', grant['instance_uuid'])
    if not isinstance(grant['secret'], str) or not _HEX64.match(
            grant['secret']):
        raise exceptions.InvalidParameter(
            field='grant.secret', reason='must be 64 hexadecimal digits')
    if not isinstance(grant['slab_size_mb'], int) or grant[
            'slab_size_mb'] <= 0:
        raise exceptions.InvalidParameter(
            field='grant.slab_size_mb', reason='must be a positive integer')
    slabs, count = [], 0
    for n, slab in enumerate(grant['slabs'] or ()):
        if slab.get('status') in _GONE_SLABS:
            continue
        on_donor = slab.get('status') not in _ENDED_SLABS
        try:
            index = int(slab['index'])
            if on_donor:
                slabs.append({'index': index,
                              'endpoint': str(slab['endpoint']),
                              'remote_addr': int(slab['remote_addr']),
                              'rkey': int(slab['rkey'])})
        except (KeyError, TypeError, ValueError) as exc:
            raise exceptions.InvalidParameter(
                field='grant.slabs[%d]' % n, reason='needs %s (%s)' % (
                    'index, endpoint, remote_addr and rkey' if on_donor
                    else 'an index', exc))
        count = max(count, index + 1)
    if not count:
        raise exceptions.InvalidParameter(
            field='grant.slabs', reason='no slab held on a donor or in the '
                                        'local tier')
    slabs.sort(key=lambda s: s['index'])
    return (grant['uuid'], grant['instance_uuid'], grant['secret'],
            grant['slab_size_mb'], slabs, count)
