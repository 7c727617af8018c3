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

"""/v1/instances: VMs, their memory, and their working-set history."""
from memaggclient import base


class InstanceManager(base.Manager):
    """``client.instances``."""

    def list(self, limit=None, marker=None, sort_key=None, sort_dir=None,
             host=None, project_id=None, status=None):
        """One page of instances (a base.Page), filtered by ``host``,
        ``project_id`` and ``status`` when given. A caller who is not an
        admin sees its own project's only.

        ``limit`` is the page size (the API's default when None),
        ``marker`` the uuid of the last instance of the previous page,
        ``sort_key`` and ``sort_dir`` (asc, desc) the order.
        """
        return self._page('/v1/instances', 'instances', limit, marker,
                          sort_key, sort_dir, host=host,
                          project_id=project_id, status=status)

    def get(self, uuid):
        """The instance ``uuid`` as a dict."""
        return self._get('/v1/instances/%s' % base.quote(uuid), 'instance')

    def wss(self, uuid, limit=None, marker=None, sort_key=None,
            sort_dir=None, since=None, until=None):
        """One page of the instance's working-set samples (a base.Page),
        oldest first, sampled at or after ``since`` and at or before
        ``until`` (ISO 8601 strings or datetimes) when given.

        ``marker`` is the id of the last sample of the previous page.
        """
        return self._page('/v1/instances/%s/wss' % base.quote(uuid),
                          'wss_samples', limit, marker, sort_key, sort_dir,
                          since=since, until=until)
