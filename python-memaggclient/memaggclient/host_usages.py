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

"""/v1/host_usages: every host's memory in one answer."""
from memaggclient import base

_SINCE = (1, 5)
_PAGED_SINCE = (1, 12)


class HostUsageManager(base.Manager):
    """``client.host_usages``."""

    def list(self):
        """Every host's memory and what its instances use, in one request
        (no pages): a dict with ``host_usages``, a list of dicts (``host``,
        ``state``, ``memory_mb``, ``reserved_mb``, ``wss_maxavg_mb``,
        ``booked_mb``, ``instances``, ``remote_mb``, ``reported_at``), and
        ``reservoir_free_mb``. Microversion 1.5."""
        self._http.require(_SINCE, 'listing host usages')
        return self._http.request('GET', '/v1/host_usages')

    def page(self, limit=None, marker=None, sort_key=None, sort_dir=None,
             host_contains=None, state=None):
        """One page of host usages (a base.Page), each also with
        ``lent_mb``, ``borrowed_mb`` and ``free_reservoir_mb``.

        ``limit`` is the page size (every host when None), ``marker`` the
        host of the last item of the previous page, ``sort_key`` one of
        the usage's fields (host, memory_mb, booked_mb, wss_maxavg_mb,
        ...) and ``sort_dir`` asc or desc; ``host_contains`` keeps hosts
        whose name holds it (any case), ``state`` those in that state.
        Microversion 1.12.
        """
        self._http.require(_PAGED_SINCE, 'paging host usages')
        return self._page('/v1/host_usages', 'host_usages', limit, marker,
                          sort_key, sort_dir, host_contains=host_contains,
                          state=state)
