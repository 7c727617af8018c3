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

"""/v1/audits: consolidation rounds and their action plans.

From microversion 1.2 an audit can be asked for (POST /v1/audits): the API
checks its options, stores it pending and casts it to memagg-scheduler,
which plans it; a recommended audit's plan is executed on request (POST
/v1/audits/{uuid}/execute: the API moves it to executing, so that of two
requests at once one only is carried out, and casts the execution).
"""
import re

from memagg.api.controllers import base
from memagg.api.policies import audits as policy
from memagg.api import request_schemas
from memagg.api import schemas
from memagg.api import views
from memagg.common import exceptions
from memagg.db import audits as db_audits
from memagg.scheduler import consolidation
from memagg.scheduler import mode
from memagg.scheduler import round_options

_SINCE = (1, 2)
_CONF_FIELD = re.compile(r'^\[%s\] (.+)$' % round_options.GROUP)


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
        db_audits.audit_get(base.context(), uuid), base.version())}


def _request_field(field, parameters):
    """The request's name for a field load_algorithms named: its
    ``[consolidation] <option>`` or ``<family>.<plugin>.<key>``."""
    match = _CONF_FIELD.match(field or '')
    parts = (field or '').split('.')
    # A plug-in's parameter is recognised first: vm_selection and
    # placement name both a family and an option.
    if not match and len(parts) == 3:
        family, plugin, key = parts
        group = base.conf().consolidation
        for option, (option_family, _dim) in round_options.FAMILIES.items():
            chosen = parameters.get(option, getattr(group, option))
            given = parameters.get(option + '_params', {})
            if option_family == family and chosen == plugin and (
                    key in given or option + '_params' not in parameters):
                return 'parameters.%s_params.%s' % (option, key)
        return field
    name = match.group(1) if match else field
    if name == 'memory_basis':
        return name
    if (name or '').split('.')[0] in round_options.OPTIONS:
        return 'parameters.' + name
    return field


def _check_parameters(memory_basis, parameters):
    """Build the round's plug-ins as memagg-scheduler will, so that a bad
    option is refused now (400) rather than fail the audit later."""
    try:
        consolidation.load_algorithms(
            base.conf().consolidation,
            dict(parameters, memory_basis=memory_basis))
    except exceptions.InvalidParameter as exc:
        raise exceptions.InvalidParameter(
            field=_request_field(exc.kwargs.get('field'), parameters),
            reason=exc.kwargs.get('reason', exc.message))


@base.route('/v1/audits', 'Start a consolidation round: the audit is '
            'planned by memagg-scheduler (pending, planning, then '
            'recommended or failed). Since 1.2.',
            schemas.item_response('audit', 'AuditDetail'), method='POST',
            body=request_schemas.AUDIT_CREATE, status=202, min_version=_SINCE)
def create_audit(query, body):
    base.enforce(policy.CREATE)
    ctxt = base.context()
    memory_basis = body.get('memory_basis',
                            base.conf().consolidation.memory_basis)
    parameters = body.get('parameters', {})
    _check_parameters(memory_basis, parameters)
    audit = db_audits.audit_create(ctxt, dict(
        memory_basis=memory_basis, parameters=parameters or None,
        auto_execute=body.get('auto_execute', False)))
    # The audit as accepted: read back after the cast, it was whatever
    # state memagg-scheduler had reached by then (a CI run got planning).
    accepted = db_audits.audit_get(ctxt, audit.uuid)
    try:
        base.cast_scheduler('run_audit', 'audit %s' % audit.uuid,
                            audit.uuid)
    except exceptions.ServiceUnavailable as exc:
        db_audits.audit_set_state(ctxt, audit.uuid, 'failed',
                                  reason=exc.message, expected=('pending',))
        raise
    return {'audit': views.audit_detail(accepted, base.version())}


@base.route('/v1/audits/{uuid}/execute', 'Execute a recommended audit\'s '
            'plan through Nova (executing, then succeeded, partial or '
            'failed). 409 when memagg-scheduler runs in observe mode. '
            'Since 1.2.',
            schemas.item_response('audit', 'AuditDetail'), method='POST',
            path_params={'uuid': schemas.UUID}, body=request_schemas.NO_BODY,
            status=202, errors=(404, 409), min_version=_SINCE)
def execute_audit(uuid, query, body):
    base.enforce(policy.EXECUTE)
    ctxt = base.context()
    # An unknown audit is 404 before observe mode's 409.
    db_audits.audit_get(ctxt, uuid)
    mode.check_manages(base.conf(), 'audit %s is not executed' % uuid)
    # A compare-and-set: of concurrent requests one only moves the audit
    # on and casts its execution; the others find it executing.
    won, state = db_audits.audit_compare_and_set(ctxt, uuid, 'recommended',
                                                 'executing')
    if not won:
        raise exceptions.Conflict(
            reason='audit %s is %s: only a recommended audit can be '
                   'executed' % (uuid, state))
    accepted = db_audits.audit_get(ctxt, uuid)
    try:
        base.cast_scheduler('execute_audit', 'audit %s' % uuid, uuid)
    except exceptions.ServiceUnavailable:
        db_audits.audit_compare_and_set(ctxt, uuid, 'executing',
                                        'recommended')
        raise
    return {'audit': views.audit_detail(accepted, base.version())}
