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

"""/v1/migrations: live migrations memagg asked Nova for."""
from memaggclient import base

_SINCE = (1, 4)


class MigrationManager(base.Manager):
    """``client.migrations``."""

    def list(self, limit=None, marker=None, sort_key=None, sort_dir=None,
             instance_uuid=None, source_host=None, dest_host=None,
             status=None, since=None, until=None):
        """One page of migrations (a base.Page), filtered by
        ``instance_uuid``, ``source_host``, ``dest_host`` and ``status``,
        and created in [``since``, ``until``], when given.

        ``limit`` is the page size (the API's default when None),
        ``marker`` the uuid of the last migration of the previous page,
        ``sort_key`` and ``sort_dir`` (asc, desc) the order.
        """
        return self._page('/v1/migrations', 'migrations', limit, marker,
                          sort_key, sort_dir, instance_uuid=instance_uuid,
                          source_host=source_host, dest_host=dest_host,
                          status=status, since=since, until=until)

    def get(self, uuid):
        """The migration ``uuid`` as a dict."""
        return self._get('/v1/migrations/%s' % base.quote(uuid),
                         'migration')

    def create(self, instance_uuid, dest_host):
        """Ask for the instance to be live-migrated to host ``dest_host``;
        return the migration, queued (memagg-scheduler runs it as a
        one-action plan). Microversion 1.4."""
        self._http.require(_SINCE, 'creating a migration')
        return self._http.request(
            'POST', '/v1/migrations',
            json={'instance_uuid': instance_uuid,
                  'dest_host': dest_host})['migration']
