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

"""/v1/hosts: compute hosts, and taking back memory they lend."""
from memaggclient import base


class HostManager(base.Manager):
    """``client.hosts``."""

    def list(self, limit=None, marker=None, sort_key=None, sort_dir=None,
             state=None):
        """One page of hosts (a base.Page), those in ``state`` only when
        given (active, standby...).

        ``limit`` is the page size (the API's default when None),
        ``marker`` the name of the last host of the previous page,
        ``sort_key`` and ``sort_dir`` (asc, desc) the order.
        """
        return self._page('/v1/hosts', 'hosts', limit, marker, sort_key,
                          sort_dir, state=state)

    def get(self, name):
        """The host ``name`` as a dict."""
        return self._get('/v1/hosts/%s' % base.quote(name), 'host')

    def reclaim(self, name, size_mb):
        """Take back ``size_mb`` MiB the host ``name`` lends (whole slabs,
        newest grants first); return the MiB the reclaim took, which
        memagg-scheduler gives back after the answer. Microversion 1.3."""
        self._http.require((1, 3), 'reclaiming memory from a host')
        return self._http.request(
            'POST', '/v1/hosts/%s/reclaim' % base.quote(name),
            json={'size_mb': size_mb})['reclaimed_mb']
