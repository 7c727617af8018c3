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

"""memagg-status: is this deployment ready to run (or upgrade)?

    memagg-status [--config-file FILE] upgrade check [--json]

Runs the checks below (schema, services, grant secrets) with
oslo.upgradecheck and exits with the worst result: 0 success, 1 warning, 2
failure (2 also for bad arguments, with one line on stderr).
"""
import os
import sys

from oslo_db import exception as db_exc
from oslo_upgradecheck import upgradecheck
import sqlalchemy as sa

from memagg.common import cli
from memagg.common import context as memagg_context
from memagg.conf import CONF
from memagg.db import facade as db_facade
from memagg.db import grant_secrets as db_grant_secrets
from memagg.db import listings as db_listings
from memagg.db import migration
from memagg.db import secret_box
from memagg.db import services as db_services

# The services that must heartbeat for memagg to work.
WATCHED_BINARIES = ('memagg-scheduler', 'memagg-compute')

DESCRIPTION = """\
memagg-status upgrade check says whether this memagg can run: the
database schema at this code's revision, the services sending heartbeats,
and the grants' secrets under the current key."""
_DB_ERRORS = (db_exc.DBError, sa.exc.SQLAlchemyError)
Code = upgradecheck.Code
Result = upgradecheck.Result


class Checks(upgradecheck.UpgradeCommands):
    """memagg's upgrade checks."""

    def _check_schema(self):
        """The database schema is at the newest revision this code knows."""
        fix = 'run "memagg-manage db upgrade"'
        try:
            current = migration.require_schema()
        except migration.NotSetUp as error:
            return Result(Code.FAILURE, '%s%s.' % (str(error)[0].upper(),
                                                   str(error)[1:]))
        except _DB_ERRORS as error:
            return Result(Code.FAILURE, db_facade.describe_error(error))
        head = migration.head()
        if current != head:
            return Result(Code.FAILURE,
                          'The schema is at revision %s, this code needs %s: '
                          '%s.' % (current, head, fix))
        return Result(Code.SUCCESS, 'Schema at revision %s.' % current)

    def _check_services(self):
        """Every enabled scheduler and compute service heartbeats."""
        context = memagg_context.get_admin_context()
        try:
            if migration.version() != migration.head():
                return Result(Code.WARNING, 'Not checked: the services table '
                              'needs the schema at head (see Database '
                              'schema).')
            services = [s for s in db_listings.list_resources(context,
                                                              'services')
                        if s.binary in WATCHED_BINARIES and not s.disabled]
        except _DB_ERRORS as error:
            return Result(Code.FAILURE, db_facade.describe_error(error))
        if not services:
            return Result(Code.WARNING,
                          'No %s service has registered yet: start them; each '
                          'writes a heartbeat every [DEFAULT] report_interval '
                          'seconds.' % ' or '.join(WATCHED_BINARIES))
        down = ['%s on %s' % (s.binary, s.host) for s in services
                if not db_services.service_is_up(s)]
        if down:
            return Result(Code.WARNING,
                          '%d of %d services sent no heartbeat in the last '
                          '[DEFAULT] service_down_time (%d s): %s. Check '
                          'that they run and reach the database.'
                          % (len(down), len(services), CONF.service_down_time,
                             ', '.join(down)))
        return Result(Code.SUCCESS, '%d services up.' % len(services))

    def _check_grant_secrets(self):
        """[database] secret_key_file can be used and every stored grant
        secret is wrapped with its key."""
        fix = 'run "memagg-manage grant_secrets rewrap'
        try:
            current = secret_box.current_key()
        except secret_box.KeyFileError as error:
            return Result(Code.FAILURE, str(error))
        try:
            if migration.version() != migration.head():
                return Result(Code.WARNING, 'Not checked: the grants table '
                              'needs the schema at head (see Database '
                              'schema).')
            counts = db_grant_secrets.grant_secret_key_ids(
                memagg_context.get_admin_context())
        except _DB_ERRORS as error:
            return Result(Code.FAILURE, db_facade.describe_error(error))
        problems = []
        if counts.get(None):
            problems.append('%d stored in clear (%s")' % (counts[None], fix))
        others = sorted(k for k in counts if k not in (None, current.key_id))
        if others:
            problems.append('%d wrapped with other keys (%s; %s '
                            '--old-key-file OLD_KEY_FILE")' % (
                                sum(counts[k] for k in others),
                                ', '.join(others), fix))
        if problems:
            return Result(Code.FAILURE, 'Grant secrets not under the key in '
                          '[database] secret_key_file (%s): %s.' % (
                              current.key_id, '; '.join(problems)))
        return Result(Code.SUCCESS, '%d grant secrets wrapped with key %s.'
                      % (counts.get(current.key_id, 0), current.key_id))

    _upgrade_checks = (
        ('Database schema', _check_schema),
        ('Services', _check_services),
        ('Grant secrets', _check_grant_secrets),
    )


def main(argv=None):
    """Entry point of memagg-status; returns the exit status."""
    prog = os.path.basename(sys.argv[0]) or 'memagg-status'
    checks = Checks()
    upgradecheck.register_cli_options(CONF, checks)
    try:
        cli.parse(CONF, sys.argv[1:] if argv is None else argv, prog,
                  DESCRIPTION)
        if CONF.command.check != 'check':
            raise cli.UsageError(
                'argument check: %r is not a command; use "%s upgrade check"'
                % (CONF.command.check, prog))
    except cli.UsageError as error:
        return cli.fail(prog, error)
    # oslo.upgradecheck reads --json from its module-level CONF.
    upgradecheck.CONF = CONF
    return upgradecheck.run(CONF)


if __name__ == '__main__':
    sys.exit(main())
