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
