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

"""What memagg's API says about every host, read once for many scheduling
requests and shared by RealMemoryFilter and RealMemoryWeigher in one
nova-scheduler process, and each host's real free memory from it.

One call of ``GET /v1/host_usages`` (microversion 1.5, through memagg's
client) answers for every host. The answer is reused for [memagg]
cache_ttl seconds; a scheduling request keeps the answer it was first
given, so its filter, its weigher and each of its instances see the same
one, and with cache_ttl = 0 every request still makes a single call. A
failed call (memagg unreachable, an HTTP error, a body that is not the
documented one, an API older than 1.5) raises nothing: the answer is then
a failure reason, logged in one WARNING line per attempt, at most once per
cache_ttl, and the filter and the weigher act on it as [memagg] on_failure
says.

To enable, see memagg.nova.filters and memagg.nova.weights; the options
are in memagg.nova.conf.
"""
import collections
import threading
import time
import weakref

from keystoneauth1.loading import adapter as ks_adapter
from oslo_log import log as logging
from oslo_utils import timeutils

from memaggclient import client as memagg_client
from memaggclient import exceptions as client_exceptions
from memagg.common import exceptions
from memagg.common import keystone
from memagg.nova import conf as memagg_conf

LOG = logging.getLogger(__name__)

#: The microversion that has GET /v1/host_usages.
API_VERSION = '1.5'

_NO_AUTH = ('nova-scheduler calls memagg\'s API with it: set a keystoneauth1 '
            'plug-in, e.g. password (with auth_url, username, password, '
            'project_name and their domains) to find memagg in the catalog, '
            'or none with endpoint_override for a memagg API without '
            'Keystone')

#: One host as memagg's API reports it; reported_at is an aware datetime
#: or None (not reported yet).
HostUsage = collections.namedtuple('HostUsage', [
    'memory_mb', 'reserved_mb', 'wss_maxavg_mb', 'booked_mb', 'reported_at'])

_COUNTS = ('memory_mb', 'reserved_mb', 'wss_maxavg_mb', 'booked_mb')

_EFFECTS = {'open': 'RealMemoryFilter passes every host',
            'closed': 'RealMemoryFilter refuses every host'}


def make_client(conf):
    """memagg's Client from ``conf``'s [memagg] session, auth and adapter
    options, at microversion 1.5; InvalidParameter naming the option when
    they are wrong. Nothing is sent yet."""
    group = conf[memagg_conf.GROUP.name]
    session = keystone.load_session(conf, memagg_conf.GROUP.name, _NO_AUTH)
    options = {}
    try:
        ks_adapter.process_conf_options(group, options)
    except TypeError as exc:  # keystoneauth's word for conflicting values
        raise exceptions.InvalidParameter(
            field='[%s]' % memagg_conf.GROUP.name, reason=exc)
    # The client always calls its own service type; memagg_conf.load
    # checked that the option says the same.
    del options['service_type']
    return memagg_client.Client(session, api_version=API_VERSION, **options)


def _count(mapping, field, where):
    value = mapping.get(field)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError('%s.%s is %r, not a number of MiB'
                         % (where, field, value))
    return value


def _parse(body):
    """({host name: HostUsage}, reservoir_free_mb) of the API's body;
    ValueError naming the field that is not as documented."""
    if not isinstance(body, dict) or not isinstance(
            body.get('host_usages'), list):
        raise ValueError('no host_usages list in %.200r' % (body,))
    hosts = {}
    for index, item in enumerate(body['host_usages']):
        where = 'host_usages[%d]' % index
        if not isinstance(item, dict) or not isinstance(item.get('host'),
                                                        str):
            raise ValueError('%s has no host name: %.200r' % (where, item))
        counts = {field: _count(item, field, where) for field in _COUNTS}
        reported_at = item.get('reported_at')
        if reported_at is not None:
            try:
                reported_at = timeutils.parse_isotime(reported_at)
            except (TypeError, ValueError):
                raise ValueError('%s.reported_at is %r, not a time'
                                 % (where, reported_at))
        hosts[item['host']] = HostUsage(reported_at=reported_at, **counts)
    return hosts, _count(body, 'reservoir_free_mb', 'the body')


class Snapshot:
    """One answer of memagg's API (``failure`` None), or the reason there
    is none (``failure``, one line)."""

    def __init__(self, settings, hosts=None, reservoir_free_mb=0,
                 failure=None):
        self.settings = settings
        self.failure = failure
        self.taken_at = time.monotonic()
        self._hosts = hosts or {}
        self._reservoir_free_mb = reservoir_free_mb
        self._logged = set()
        self._lock = threading.Lock()

    def real_free_mb(self, host_state):
        """(MiB, None): the real free memory of ``host_state`` (a Nova
        HostState; memagg knows a host by Nova's ``host``, the
        ``[DEFAULT] host`` memagg-compute reports as). (None, reason) when
        memagg cannot tell: this answer failed, the host is unknown to
        memagg, or its last report is missing or older than
        stale_after."""
        if self.failure is not None:
            return None, self.failure
        usage = self._hosts.get(host_state.host)
        if usage is None:
            return None, 'unknown to memagg'
        if usage.reported_at is None:
            return None, 'not reported by memagg-compute yet'
        age = (timeutils.utcnow(with_timezone=True)
               - usage.reported_at).total_seconds()
        if age > self.settings.stale_after:
            return None, ('last reported %d s ago, more than [memagg] '
                          'stale_after' % age)
        # Nova's used memory (total_usable_ram_mb - free_ram_mb) is its
        # reserved_host_memory_mb plus the flavors of the instances Nova
        # placed there, including those placed earlier in this very request
        # (HostState.consume_from_request). memagg reports the same reserve
        # (memagg-compute's [compute] reserved_host_memory_mb, set equal to
        # Nova's) and the flavors of the instances memagg-compute has seen
        # (booked_mb). The rest was placed since its last report: no working
        # set is known for it yet, so it counts at its full booked size.
        placed_mb = (host_state.total_usable_ram_mb - host_state.free_ram_mb
                     - usage.reserved_mb)
        unreported_mb = max(0, placed_mb - usage.booked_mb)
        borrowable_mb = int(self.settings.remote_share
                            * self._reservoir_free_mb)
        return (usage.memory_mb - usage.reserved_mb - usage.wss_maxavg_mb
                - unreported_mb + borrowable_mb), None

    def warn_once(self, unusable, who, effect):
        """Log in one WARNING line the (host, reason) pairs of
        ``unusable`` that were not logged before for this answer (so at
        most once per cache_ttl); ``who`` did ``effect`` to them."""
        with self._lock:
            new = [pair for pair in unusable if pair not in self._logged]
            self._logged.update(new)
        if new:
            LOG.warning('memagg cannot vouch for %(count)d host(s): '
                        '%(hosts)s; %(who)s %(effect)s',
                        {'count': len(new), 'who': who, 'effect': effect,
                         'hosts': ', '.join('%s (%s)' % pair
                                            for pair in new)})

    def first_time(self, key):
        """True the first time ``key`` is passed for this answer: for a
        warning given once per cache_ttl."""
        with self._lock:
            if key in self._logged:
                return False
            self._logged.add(key)
            return True


class HostUsageCache:
    """memagg's answer for every host, shared by the filter and the
    weigher and by the scheduler's threads.

    ``api_calls`` is the number of GET /v1/host_usages calls made (the
    first one also reads the API's version document, once per client).
    """

    def __init__(self, settings, client):
        self.settings = settings
        self.api_calls = 0
        self._client = client
        self._latest = None
        # The answer each scheduling request (RequestSpec) was given, for as
        # long as Nova keeps the request.
        self._by_request = weakref.WeakKeyDictionary()
        # Held while calling memagg, so that concurrent requests wait for
        # one call rather than each making its own.
        self._lock = threading.Lock()

    def snapshot(self, request):
        """The Snapshot for scheduling request ``request`` (Nova's
        RequestSpec): the one it was given before, else the latest if
        younger than cache_ttl, else a new one from memagg's API."""
        with self._lock:
            snapshot = self._by_request.get(request)
            if snapshot is None:
                if self._latest is None or (
                        time.monotonic() - self._latest.taken_at
                        >= self.settings.cache_ttl):
                    self._latest = self._fetch(self._latest)
                snapshot = self._by_request[request] = self._latest
            return snapshot

    def _fetch(self, previous):
        self.api_calls += 1
        try:
            body = self._client.host_usages.list()
        except client_exceptions.ClientException as exc:
            return self._failed(str(exc))
        except ValueError as exc:  # requests' JSON decoding error
            return self._failed('its answer is not JSON: %s' % exc)
        except Exception as exc:
            # Whatever else breaks in memagg's client or its libraries must
            # not fail Nova's scheduling request.
            LOG.exception('Unexpected error reading memagg\'s host usages')
            return self._failed('unexpected error: %s' % exc)
        try:
            hosts, reservoir_free_mb = _parse(body)
        except ValueError as exc:
            return self._failed('its answer is not the documented '
                                'host_usages body: %s' % exc)
        if previous is not None and previous.failure is not None:
            LOG.info('memagg\'s host usages are available again')
        return Snapshot(self.settings, hosts, reservoir_free_mb)

    def _failed(self, reason):
        on_failure = self.settings.on_failure
        ttl = self.settings.cache_ttl
        LOG.warning('memagg\'s host usages are unavailable: %(reason)s; '
                    '%(effect)s ([memagg] on_failure = %(mode)s) and '
                    'RealMemoryWeigher weighs every host the same, until '
                    'the next attempt %(when)s',
                    {'reason': reason, 'effect': _EFFECTS[on_failure],
                     'mode': on_failure,
                     'when': ('in %d s' % ttl if ttl else
                              'at the next scheduling request')})
        return Snapshot(self.settings, failure=reason)


_lock = threading.Lock()
_shared = None


def configure(conf):
    """Check ``conf``'s [memagg] options and make the process's
    HostUsageCache from them, replacing the one before; return it.
    InvalidParameter names the first wrong option. The filter and the
    weigher call it when Nova makes them, at nova-scheduler's start."""
    global _shared
    cache = HostUsageCache(memagg_conf.load(conf), make_client(conf))
    with _lock:
        _shared = cache
    return cache


def shared():
    """The HostUsageCache the last :func:`configure` made, which the filter
    and the weigher use."""
    with _lock:
        return _shared
