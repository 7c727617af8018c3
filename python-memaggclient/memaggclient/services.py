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

"""/v1/services: memagg's processes and their heartbeats."""
from memaggclient import base


class ServiceManager(base.Manager):
    """``client.services``."""

    def list(self, limit=None, marker=None, sort_key=None, sort_dir=None,
             host=None, binary=None, disabled=None):
        """One page of services (a base.Page), filtered by ``host``,
        ``binary`` and ``disabled`` (a bool) when given.

        ``limit`` is the page size (the API's default when None),
        ``marker`` the id of the last service of the previous page,
        ``sort_key`` and ``sort_dir`` (asc, desc) the order.
        """
        return self._page('/v1/services', 'services', limit, marker,
                          sort_key, sort_dir, host=host, binary=binary,
                          disabled=disabled)
