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
from memagg.api.controllers import base
from memagg.api.policies import migrations as policy
from memagg.api import schemas
from memagg.api import views
from memagg.db import api as db_api


@base.route('/v1/migrations', 'List migrations.',
            schemas.list_response('migrations'),
            query=base.list_query('migrations'))
def list_migrations(query):
    base.enforce(policy.LIST)
    version = base.version()
    return base.paginate('migrations', query, lambda row: views.render(
        'Migration', row, version))


@base.route('/v1/migrations/{uuid}', 'Show a migration and what it cost.',
            schemas.item_response('migration', 'Migration'),
            path_params={'uuid': schemas.UUID}, errors=(404,))
def get_migration(uuid, query):
    base.enforce(policy.GET)
    return {'migration': views.render(
        'Migration', db_api.migration_get(base.context(), uuid),
        base.version())}
