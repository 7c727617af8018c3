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

"""memagg-manage: administer memagg's database.

    memagg-manage [--config-file FILE] db upgrade [--revision REV]
    memagg-manage [--config-file FILE] db version
    memagg-manage [--config-file FILE] db purge [--older-than-hours N]
                                                [--audits-older-than-hours N]
    memagg-manage [--config-file FILE] grant_secrets rewrap
                  [--old-key-file OLD_KEY_FILE ...] [--batch-size N]

Exit status: 0 done, 1 the database failed or has no memagg schema yet
(or some grant secrets could not be rewrapped), 2 bad arguments or
configuration; every error is one line on stderr. Only ``db upgrade``
creates a database: the others name the one they would use and create
nothing.
"""
import os
import sys

from alembic import util as alembic_util
from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_log import log as logging
import sqlalchemy as sa

from memagg.common import cli
from memagg.common import context as memagg_context
from memagg.conf import CONF
from memagg.db import audits as db_audits
from memagg.db import facade as db_facade
from memagg.db import grants as db_grants
from memagg.db import migration
from memagg.db import samples as db_samples
from memagg.db import secret_box

DB_ERROR = 1
DESCRIPTION = """\
memagg-manage administers memagg's database: it migrates the schema,
purges old samples and audits, and wraps the grants' secrets with the
current key."""


class DbCommands:
    """``memagg-manage db ACTION``: schema migrations and purges."""

    def upgrade(self, revision='head'):
        """Migrate the schema up to ``revision``; print where it is now."""
        try:
            migration.upgrade(revision)
        except alembic_util.CommandError as error:
            raise cli.UsageError(
                'argument --revision: %s; run "memagg-manage db version" to '
                'see where the database is' % error)
        print('Database schema at revision %s' % migration.version())

    def version(self):
        """Print the schema's revision (NotSetUp without one)."""
        print(migration.require_schema())

    def purge(self, older_than_hours=None, audits_older_than_hours=None):
        """Delete WSS and host samples older than ``older_than_hours``
        (default: [wss] sample_retention_hours), then the audits that
        ended more than ``audits_older_than_hours`` ago (default:
        [consolidation] audit_retention_hours) with their actions and
        migrations; print how many of each."""
        # Both checked before anything is deleted.
        for flag, hours in (('--older-than-hours', older_than_hours),
                            ('--audits-older-than-hours',
                             audits_older_than_hours)):
            if hours is not None and hours < 0:
                raise cli.UsageError('argument %s: %s is negative; give 0 '
                                     'or more' % (flag, hours))
        migration.require_schema()
        context = memagg_context.get_admin_context()
        count = db_samples.purge_wss_samples(context, older_than_hours)
        hours = (CONF.wss.sample_retention_hours if older_than_hours is None
                 else older_than_hours)
        print('Deleted %d WSS and host samples older than %d hours'
              % (count, hours))
        count = db_audits.purge_audits(context, audits_older_than_hours)
        hours = (CONF.consolidation.audit_retention_hours
                 if audits_older_than_hours is None
                 else audits_older_than_hours)
        print('Deleted %d audits that ended more than %d hours ago, with '
              'their actions and migrations' % (count, hours))


class GrantSecretsCommands:
    """``memagg-manage grant_secrets ACTION``: the grants' secrets, stored
    wrapped with the key in [database] secret_key_file."""

    def rewrap(self, old_key_files=(), batch_size=100):
        """Wrap every grant secret with the current key: those under the
        keys in ``old_key_files`` and those stored in clear by a memagg
        from before wrapping; print how many. Returns the exit status: 1
        when some could not be (their grants and why on stderr)."""
        if batch_size < 1:
            raise cli.UsageError('argument --batch-size: %d is less than 1; '
                                 'give 1 or more' % batch_size)
        try:
            old_keys = [secret_box.load_key(path, '--old-key-file')
                        for path in old_key_files]
            migration.require_schema()
            result = db_grants.grant_secrets_rewrap(
                memagg_context.get_admin_context(), old_keys, batch_size)
        except secret_box.KeyFileError as error:
            raise cli.UsageError(str(error))
        print('Rewrapped %d grant secrets from an old key, wrapped %d '
              'stored in clear; %d were under the current key already'
              % (result['rewrapped'], result['wrapped'], result['current']))
        for uuid, why in result['failed']:
            sys.stderr.write('%s\n' % why)
        if result['failed']:
            sys.stderr.write('%d grant secrets were not rewrapped: give the '
                             'key they are under with --old-key-file\n'
                             % len(result['failed']))
            return DB_ERROR
        return 0


def _add_command_parsers(subparsers):
    subparsers.required = True
    subparsers.metavar = 'COMMAND'
    db = subparsers.add_parser('db', help='Database schema and data.')
    actions = db.add_subparsers(dest='action', metavar='ACTION',
                                title='actions')
    actions.required = True
    upgrade = actions.add_parser(
        'upgrade', help='Migrate the schema up to a revision.')
    upgrade.add_argument('--revision', default='head',
                         help='Alembic revision to migrate to '
                              '(default: head, the newest).')
    actions.add_parser('version', help="Print the schema's revision.")
    purge = actions.add_parser(
        'purge', help='Delete WSS and host samples, and audits that ended, '
                      'past their retention.')
    purge.add_argument('--older-than-hours', type=int, default=None,
                       dest='older_than_hours', metavar='N',
                       help='Delete samples older than N hours (default: '
                            '[wss] sample_retention_hours).')
    purge.add_argument('--audits-older-than-hours', type=int, default=None,
                       dest='audits_older_than_hours', metavar='N',
                       help='Delete audits that ended (any state but '
                            'pending, planning and executing) and last '
                            'changed more than N hours ago, with their '
                            'actions and migrations (default: '
                            '[consolidation] audit_retention_hours).')

    secrets = subparsers.add_parser(
        'grant_secrets', help="The grants' secrets, stored wrapped.")
    actions = secrets.add_subparsers(dest='action', metavar='ACTION',
                                     title='actions')
    actions.required = True
    rewrap = actions.add_parser(
        'rewrap', help='Wrap every grant secret with the key in [database] '
                       'secret_key_file: those under an old key and those '
                       'stored in clear.')
    rewrap.add_argument('--old-key-file', action='append', default=[],
                        dest='old_key_files', metavar='OLD_KEY_FILE',
                        help='A key file the secrets were wrapped with '
                             'before; repeat for several.')
    rewrap.add_argument('--batch-size', type=int, default=100,
                        dest='batch_size', metavar='N',
                        help='Grants per transaction (default: 100).')


category_opt = cfg.SubCommandOpt('category', title='Commands',
                                 handler=_add_command_parsers,
                                 help='Available categories')


def _run():
    """Run the command line's command; its exit status."""
    if CONF.category.name == 'grant_secrets':
        return GrantSecretsCommands().rewrap(CONF.category.old_key_files,
                                             CONF.category.batch_size)
    command = DbCommands()
    action = CONF.category.action
    if action == 'upgrade':
        command.upgrade(CONF.category.revision)
    elif action == 'purge':
        command.purge(CONF.category.older_than_hours,
                      CONF.category.audits_older_than_hours)
    else:
        command.version()
    return 0


def main(argv=None):
    """Entry point of memagg-manage; returns the exit status."""
    prog = os.path.basename(sys.argv[0]) or 'memagg-manage'
    CONF.register_cli_opt(category_opt)
    logging.register_options(CONF)
    # alembic narrates every step at INFO; the command prints the outcome.
    logging.set_defaults(default_log_levels=logging.get_default_log_levels()
                         + ['alembic=WARN'])
    try:
        cli.parse(CONF, sys.argv[1:] if argv is None else argv, prog,
                  DESCRIPTION)
        logging.setup(CONF, 'memagg')
        status = _run()
    except cli.UsageError as error:
        return cli.fail(prog, error)
    except migration.NotSetUp as error:
        return cli.fail(prog, error, DB_ERROR)
    except (db_exc.DBError, sa.exc.SQLAlchemyError) as error:
        return cli.fail(prog, db_facade.describe_error(error), DB_ERROR)
    return status


if __name__ == '__main__':
    sys.exit(main())
