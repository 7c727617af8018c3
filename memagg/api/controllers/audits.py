"""/v1/audits: consolidation rounds and their action plans."""
from memagg.api.controllers import base
from memagg.api.policies import audits as policy
from memagg.api import schemas
from memagg.api import views
from memagg.db import api as db_api


@base.route('/v1/audits', 'List consolidation audits.',
            schemas.list_response('audits'), query=base.list_query('audits'))
def list_audits(query):
    base.enforce(policy.LIST)
    version = base.version()
    return base.paginate('audits', query, lambda row: views.render(
        'Audit', row, version))


@base.route('/v1/audits/{uuid}', 'Show an audit and its ordered actions.',
            schemas.item_response('audit', 'AuditDetail'),
            path_params={'uuid': schemas.UUID}, errors=(404,))
def get_audit(uuid, query):
    base.enforce(policy.GET)
    return {'audit': views.audit_detail(
        db_api.audit_get(base.context(), uuid), base.version())}
