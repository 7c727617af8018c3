"""/v1/services: memagg's processes and their heartbeats."""
from memagg.api.controllers import base
from memagg.api.policies import services as policy
from memagg.api import schemas
from memagg.api import views


@base.route('/v1/services', 'List memagg services; state is up or down '
            'from the last heartbeat.', schemas.list_response('services'),
            query=base.list_query('services'))
def list_services(query):
    base.enforce(policy.LIST)
    return base.paginate('services', query,
                         lambda row: views.service(row, base.version()))
