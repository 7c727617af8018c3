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

"""/v1/migrations: live migrations memagg asked Nova for.

From microversion 1.4 an operator can ask for one (POST /v1/migrations):
the API checks the instance and the destination, stores a recommended
audit whose plan is that one migrate action, with its migration queued,
and casts the audit to memagg-scheduler for execution, the way an audit's
plan is executed (memagg.scheduler.migration).
"""
from memagg.api.controllers import base
from memagg.api.policies import migrations as policy
from memagg.api import request_schemas
from memagg.api import schemas
from memagg.api import views
from memagg.common import exceptions
from memagg.db import audits as db_audits
from memagg.db import hosts as db_hosts
from memagg.db import instances as db_instances
from memagg.db import migrations as db_migrations
from memagg.scheduler import mode

_SINCE = (1, 4)
#: audit_actions.reason of a migration an operator asked for.
REQUESTED = 'requested'


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
        'Migration', db_migrations.migration_get(base.context(), uuid),
        base.version())}


def _check_request(instance, dest):
    """400 or 409 when ``instance`` cannot be moved to host ``dest``
    now."""
    if dest.name == instance.host:
        raise exceptions.InvalidParameter(
            field='dest_host', reason='is the host instance %s is on '
            'already: name another host' % instance.uuid)
    if dest.state != 'active':
        raise exceptions.Conflict(
            reason='host %s is %s: only an active host can take an '
                   'instance' % (dest.name, dest.state))
    if instance.status == 'gone':
        raise exceptions.Conflict(
            reason='instance %s is gone from host %s' % (
                instance.uuid, instance.host))


@base.route('/v1/migrations', 'Live-migrate an instance to a named host '
            'through the compute API: the migration is queued, then '
            'running, then succeeded or failed; it is executed as a '
            'one-action plan, listed with the audits. 409 when '
            'memagg-scheduler runs in observe mode. Since 1.4.',
            schemas.item_response('migration', 'Migration'), method='POST',
            body=request_schemas.MIGRATION_CREATE, status=202,
            errors=(404, 409), min_version=_SINCE)
def create_migration(query, body):
    base.enforce(policy.CREATE)
    ctxt = base.context()
    instance = db_instances.instance_get(ctxt, body['instance_uuid'])
    dest = db_hosts.host_get(ctxt, body['dest_host'])
    _check_request(instance, dest)
    mode.check_manages(base.conf(), 'instance %s is not migrated'
                       % instance.uuid)
    audit_uuid, migration = db_migrations.migration_request(
        ctxt, instance.uuid, instance.host, dest.name, REQUESTED)
    try:
        base.cast_scheduler('execute_audit', 'audit %s' % audit_uuid,
                            audit_uuid)
    except exceptions.ServiceUnavailable as exc:
        db_migrations.migration_finish(ctxt, migration.id, 'failed',
                                       error=exc.message)
        db_audits.audit_set_state(ctxt, audit_uuid, 'failed',
                                  reason=exc.message,
                                  expected=('recommended',))
        raise
    return {'migration': views.render('Migration', migration,
                                      base.version())}
