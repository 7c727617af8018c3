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
    memagg-manage [--config-file FILE] trace export --since TIME
                  --until TIME -o DIR [--step SECONDS] [--max-gap STEPS]

Exit status: 0 done, 1 the database failed or has no memagg schema yet
(or some grant secrets could not be rewrapped, or the trace window holds
no sample), 2 bad arguments or
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

from memagg.cmd import trace_export
from memagg.common import cli
from memagg.common import context as memagg_context
from memagg.conf import CONF
from memagg.db import audits as db_audits
from memagg.db import facade as db_facade
from memagg.db import grant_secrets as db_grant_secrets
from memagg.db import migration
from memagg.db import samples as db_samples
from memagg.db import secret_box

DB_ERROR = 1
DESCRIPTION = """\
memagg-manage administers memagg's database: it migrates the schema,
purges old samples and audits, wraps the grants' secrets with the
current key, and exports the stored history as a memagg-sim trace."""


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
            result = db_grant_secrets.grant_secrets_rewrap(
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


class TraceCommands:
    """``memagg-manage trace export``: the stored history as a memagg-sim
    trace (memagg.cmd.trace_export)."""

    def export(self, since, until, output_dir, step=None, max_gap=5):
        """Write DIR/trace.csv and DIR/hosts.csv of the samples from
        ``since`` to ``until`` (ISO 8601 texts) on a grid of ``step``
        seconds (default: [compute] collect_interval); print what was
        written. Returns the exit status: 1 for an empty window."""
        start = trace_export.parse_time('--since', since)
        end = trace_export.parse_time('--until', until)
        step = CONF.compute.collect_interval if step is None else step
        trace_export.check_window(start, end, step, max_gap)
        migration.require_schema()
        try:
            summary = trace_export.export(
                memagg_context.get_admin_context(), start, end, step,
                max_gap, output_dir)
        except OSError as error:
            raise cli.UsageError('argument -o: %s' % error)
        except trace_export.EmptyWindow as error:
            sys.stderr.write('%s\n' % error)
            return DB_ERROR
        for note in summary.notes:
            sys.stderr.write('%s\n' % note)
        print('Wrote %d rows of %d VMs over %d steps of %d s to %s and %d '
              'hosts to %s' % (
                  summary.rows, summary.vms, summary.steps, step,
                  os.path.join(output_dir, trace_export.TRACE),
                  summary.hosts,
                  os.path.join(output_dir, trace_export.HOSTS)))
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

    trace = subparsers.add_parser(
        'trace', help='The stored history as a memagg-sim trace.')
    actions = trace.add_subparsers(dest='action', metavar='ACTION',
                                   title='actions')
    actions.required = True
    export = actions.add_parser(
        'export', help='Write DIR/trace.csv and DIR/hosts.csv of the WSS and '
                       'CPU samples of a time window, for memagg-sim.')
    export.add_argument('--since', required=True, metavar='TIME',
                        help='First moment of the window, ISO 8601 (UTC '
                             'when no zone is given), included.')
    export.add_argument('--until', required=True, metavar='TIME',
                        help='End of the window, ISO 8601, excluded.')
    export.add_argument('-o', '--output-dir', required=True,
                        dest='output_dir', metavar='DIR',
                        help='Directory to write trace.csv and hosts.csv '
                             'in (made if missing; files there replaced).')
    export.add_argument('--step', type=int, default=None, metavar='SECONDS',
                        help='Seconds of a trace step (default: [compute] '
                             'collect_interval). A step takes the largest '
                             'WSS and the mean CPU of its samples.')
    export.add_argument('--max-gap', type=int, default=5, dest='max_gap',
                        metavar='STEPS',
                        help='Missing steps of a VM filled with its step '
                             'before (default: 5); after a longer gap it '
                             'goes on as a VM of its own, <uuid>~2.')


category_opt = cfg.SubCommandOpt('category', title='Commands',
                                 handler=_add_command_parsers,
                                 help='Available categories')


def _run():
    """Run the command line's command; its exit status."""
    if CONF.category.name == 'trace':
        category = CONF.category
        return TraceCommands().export(category.since, category.until,
                                      category.output_dir, category.step,
                                      category.max_gap)
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
