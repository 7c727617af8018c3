"""/v1/grants: remote memory lent to instances. The secret is never shown."""
from memagg.api.controllers import base
from memagg.api.policies import grants as policy
from memagg.api import schemas
from memagg.api import views
from memagg.db import api as db_api


@base.route('/v1/grants', 'List remote-memory grants.',
            schemas.list_response('grants'), query=base.list_query('grants'))
def list_grants(query):
    base.enforce(policy.LIST)
    version = base.version()
    return base.paginate('grants', query, lambda row: views.render(
        'Grant', row, version))


@base.route('/v1/grants/{uuid}', 'Show a grant and its slabs.',
            schemas.item_response('grant', 'GrantDetail'),
            path_params={'uuid': schemas.UUID}, errors=(404,))
def get_grant(uuid, query):
    base.enforce(policy.GET)
    return {'grant': views.grant_detail(
        db_api.grant_get(base.context(), uuid), base.version())}
