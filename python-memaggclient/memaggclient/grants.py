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

"""/v1/grants: remote memory lent to instances."""
from memaggclient import base

_SINCE = (1, 3)


class GrantManager(base.Manager):
    """``client.grants``."""

    def list(self, limit=None, marker=None, sort_key=None, sort_dir=None,
             instance_uuid=None, consumer_host=None, status=None):
        """One page of grants (a base.Page), filtered by
        ``instance_uuid``, ``consumer_host`` and ``status`` when given.

        ``limit`` is the page size (the API's default when None),
        ``marker`` the uuid of the last grant of the previous page,
        ``sort_key`` and ``sort_dir`` (asc, desc) the order.
        """
        return self._page('/v1/grants', 'grants', limit, marker, sort_key,
                          sort_dir, instance_uuid=instance_uuid,
                          consumer_host=consumer_host, status=status)

    def get(self, uuid):
        """The grant ``uuid`` as a dict, with its ``slabs``."""
        return self._get('/v1/grants/%s' % base.quote(uuid), 'grant')

    def create(self, instance_uuid, size_mb):
        """Lend ``size_mb`` MiB of remote memory to the instance; return
        the grant (partial, with its reason, when less could be lent).
        From microversion 1.10 it comes back pending, its slabs reserved,
        and ends active or failed (``get`` follows it). Microversion
        1.3."""
        self._http.require(_SINCE, 'creating a grant')
        return self._http.request(
            'POST', '/v1/grants',
            json={'instance_uuid': instance_uuid,
                  'size_mb': size_mb})['grant']

    def delete(self, uuid):
        """Release the grant ``uuid``; return it as it is then: releasing
        (memagg-scheduler gives the memory back after the answer), or as it
        was when it was not active. Microversion 1.3."""
        self._http.require(_SINCE, 'deleting a grant')
        return self._http.request(
            'DELETE', '/v1/grants/%s' % base.quote(uuid))['grant']
