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

"""memagg-manage, run as a process against a SQLite file; command lines
refused while parsing, through its main() in this process."""
import os

import pytest
import sqlalchemy as sa

from memagg.cmd import manage
from memagg.db import grants as db_grants
from memagg.db import migration
from memagg.db import secret_box
from memagg.db.sqlalchemy import models
from memagg.tests.unit.cmd import tools
from memagg.tests import grant_key
from memagg.tests.unit.db import rows

pytestmark = pytest.mark.slow


@pytest.fixture
def sqlite_file(tmp_path):
    """A config naming a SQLite file that does not exist yet; its URL."""
    url = 'sqlite:///%s' % (tmp_path / 'memagg.sqlite')
    return tools.write_config(tmp_path, url), url


def _manage(config, *args):
    return tools.run('memagg-manage', config, *args)


def test_upgrade_from_nothing_then_version(sqlite_file):
    config, url = sqlite_file
    path = sa.engine.make_url(url).database

    before = _manage(config, 'db', 'version')
    made = os.path.exists(path)
    upgrade = _manage(config, 'db', 'upgrade')
    after = _manage(config, 'db', 'version')

    assert (before.returncode, before.stdout) == (1, '')
    assert before.stderr.splitlines() == [
        'memagg-manage: error: no memagg database at %s ([database] '
        'connection): the file does not exist; run "memagg-manage db '
        'upgrade" to set it up' % url]
    assert not made
    assert upgrade.returncode == 0, upgrade.stderr
    assert upgrade.stdout == 'Database schema at revision %s\n' % (
        migration.head())
    assert (after.returncode, after.stdout) == (0, migration.head() + '\n')
    tables = sa.inspect(sa.create_engine(url)).get_table_names()
    assert set(models.Base.metadata.tables) <= set(tables)


@pytest.mark.parametrize('made, why', [
    (False, 'the file does not exist'),
    (True, 'it has no memagg schema'),
])
@pytest.mark.parametrize('args', [
    ('db', 'version'),
    ('db', 'purge'),
    ('grant_secrets', 'rewrap'),
])
def test_no_database_is_named_and_nothing_created(sqlite_file, made, why,
                                                  args):
    config, url = sqlite_file
    path = sa.engine.make_url(url).database
    if made:
        open(path, 'w').close()

    # In this process: it has what the process would, without its start.
    status, out, err = tools.run_main(
        manage.main, 'memagg-manage', '--config-file', str(config), *args)

    assert (status, out) == (1, '')
    assert err == (
        'memagg-manage: error: no memagg database at %s ([database] '
        'connection): %s; run "memagg-manage db upgrade" to set it up\n'
        % (url, why))
    assert os.path.exists(path) == made
    if made:
        assert os.path.getsize(path) == 0


def test_upgrade_to_named_revision(sqlite_file):
    config, _ = sqlite_file

    upgrade = _manage(config, 'db', 'upgrade', '--revision', '0001')

    assert upgrade.returncode == 0, upgrade.stderr
    assert upgrade.stdout == 'Database schema at revision 0001\n'


def _count(url, model):
    with sa.create_engine(url).connect() as connection:
        return connection.scalar(sa.select(sa.func.count()).select_from(
            model))


def test_purge_uses_retention_then_argument(sqlite_db, tmp_path):
    config = tools.write_config(tmp_path, sqlite_db)
    rows.insert(models.WssSample, *[
        dict(sampled_at=rows.ago(hours=hours)) for hours in (200, 30, 1)])
    rows.insert(models.Audit, *[
        dict(state=state, updated_at=rows.ago(hours=hours))
        for state, hours in (('succeeded', 800), ('failed', 30),
                             ('executing', 800))])

    # One bad age: nothing is deleted, not even what the other names.
    refused = _manage(config, 'db', 'purge', '--older-than-hours', '24',
                      '--audits-older-than-hours', '-1')
    samples_before = _count(sqlite_db, models.WssSample)
    default = _manage(config, 'db', 'purge')
    explicit = _manage(config, 'db', 'purge', '--older-than-hours', '24',
                       '--audits-older-than-hours', '24')

    assert (refused.returncode, refused.stdout) == (2, '')
    assert refused.stderr == (
        'memagg-manage: error: argument --audits-older-than-hours: -1 is '
        'negative; give 0 or more\n')
    assert samples_before == 3
    assert (default.returncode, default.stdout) == (
        0, 'Deleted 1 WSS and host samples older than 168 hours\n'
        'Deleted 1 audits that ended more than 720 hours ago, with their '
        'actions and migrations\n'), default.stderr
    assert (explicit.returncode, explicit.stdout) == (
        0, 'Deleted 1 WSS and host samples older than 24 hours\n'
        'Deleted 1 audits that ended more than 24 hours ago, with their '
        'actions and migrations\n'), explicit.stderr
    assert _count(sqlite_db, models.WssSample) == 1
    with sa.create_engine(sqlite_db).connect() as connection:
        states = connection.scalars(sa.select(models.Audit.state)).all()
    assert states == ['executing']


BAD_ARGUMENTS = [
    ((), 'the following arguments are required: COMMAND'),
    (('db',), 'the following arguments are required: ACTION'),
    (('db', 'downgrade'), "argument ACTION: invalid choice: 'downgrade'"),
    (('tables',), "argument COMMAND: invalid choice: 'tables'"),
    (('db', 'purge', '--older-than-hours', 'x'),
     "argument --older-than-hours: invalid int value: 'x'"),
    (('db', 'purge', '--older-than-hours', '-1'),
     'argument --older-than-hours: -1 is negative; give 0 or more'),
    (('db', 'purge', '--audits-older-than-hours', '-1'),
     'argument --audits-older-than-hours: -1 is negative; give 0 or more'),
    (('db', 'version', '--verbose-please'),
     'unrecognized arguments: --verbose-please'),
    (('grant_secrets', 'rewrap', '--batch-size', 'x'),
     "argument --batch-size: invalid int value: 'x'"),
    (('grant_secrets',), 'the following arguments are required: ACTION'),
]


@pytest.mark.parametrize('args,message', BAD_ARGUMENTS)
def test_bad_arguments_give_one_line(sqlite_file, args, message):
    config, _ = sqlite_file

    # Refused while parsing: main() in this process says what the process
    # would (test_missing_config_file and the revision below run it).
    status, out, err = tools.run_main(
        manage.main, 'memagg-manage', '--config-file', str(config), *args)

    assert (status, out) == (2, '')
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith('memagg-manage: error: ' + message)


def test_an_unknown_revision_is_one_line(sqlite_file):
    config, _ = sqlite_file

    result = _manage(config, 'db', 'upgrade', '--revision', 'nope')

    assert (result.returncode, result.stdout) == (2, '')
    (line,) = result.stderr.splitlines()
    assert line.startswith("memagg-manage: error: argument --revision: "
                           "Can't locate revision identified by 'nope'")


def test_missing_config_file(tmp_path):
    result = _manage(tmp_path / 'absent.conf', 'db', 'version')

    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        'memagg-manage: error: Failed to find some config files: %s'
        % (tmp_path / 'absent.conf')]


def test_unreachable_database_is_one_line(tmp_path):
    # Port 1 on loopback: nothing listens, the connection is refused at once.
    config = tools.write_config(
        tmp_path, 'mysql+pymysql://memagg:secret@127.0.0.1:1/memagg')

    result = _manage(config, 'db', 'upgrade')

    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith('memagg-manage: error: database '
                               'mysql+pymysql://memagg:***@127.0.0.1:1/memagg '
                               'failed: ')
    assert 'check [database] connection' in lines[0]
    assert 'secret' not in result.stderr


def _stored_secrets(url):
    with sa.create_engine(url).connect() as connection:
        return dict(connection.execute(sa.text(
            'select uuid, secret from grants')).all())


def test_grant_secrets_rewrap_from_an_old_key_and_clear(sqlite_db, tmp_path,
                                                        conf, admin_context):
    old_key = secret_box.load_key(grant_key.path())
    under_old = ['g%d' % n for n in range(3)]
    rows.insert(models.Grant, *[dict(uuid=u, secret='%02d' % n * 32)
                                for n, u in enumerate(under_old)])
    rows.insert(models.Grant, dict(uuid='legacy', wrapped_secret='ab' * 32))
    new_path = tmp_path / 'new.key'
    new_key = secret_box.create_key_file(str(new_path))
    config = tools.write_config(tmp_path, sqlite_db)
    config.write_text(config.read_text().replace(grant_key.path(),
                                                 str(new_path)))

    first = _manage(config, 'grant_secrets', 'rewrap', '--old-key-file',
                    grant_key.path(), '--batch-size', '2')
    after_first = _stored_secrets(sqlite_db)
    second = _manage(config, 'grant_secrets', 'rewrap', '--old-key-file',
                     grant_key.path())

    assert (first.returncode, first.stderr) == (0, '')
    assert first.stdout == ('Rewrapped 3 grant secrets from an old key, '
                            'wrapped 1 stored in clear; 0 were under the '
                            'current key already\n')
    assert {secret_box.key_id_of(v) for v in after_first.values()} == {
        new_key.key_id} != {old_key.key_id}
    conf.config(secret_key_file=str(new_path), group='database')
    assert [db_grants.grant_get(admin_context, u).secret
            for u in under_old + ['legacy']] == [
        '00' * 32, '01' * 32, '02' * 32, 'ab' * 32]
    assert (second.returncode, second.stdout) == (
        0, 'Rewrapped 0 grant secrets from an old key, wrapped 0 stored in '
           'clear; 4 were under the current key already\n')
    assert _stored_secrets(sqlite_db) == after_first


def test_grant_secrets_rewrap_without_the_old_key_fails(sqlite_db, tmp_path):
    rows.insert(models.Grant, dict(uuid='g1'))
    new_path = tmp_path / 'new.key'
    secret_box.create_key_file(str(new_path))
    config = tools.write_config(tmp_path, sqlite_db)
    config.write_text(config.read_text().replace(grant_key.path(),
                                                 str(new_path)))

    result = _manage(config, 'grant_secrets', 'rewrap')

    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0].startswith("Grant g1's secret is wrapped with key ")
    assert lines[-1] == ('1 grant secrets were not rewrapped: give the key '
                         'they are under with --old-key-file')


def test_grant_secrets_rewrap_refuses_an_open_old_key_file(sqlite_file,
                                                           tmp_path):
    config, _ = sqlite_file
    old = tmp_path / 'old.key'
    secret_box.create_key_file(str(old))
    old.chmod(0o644)

    status, out, err = tools.run_main(
        manage.main, 'memagg-manage', '--config-file', str(config),
        'grant_secrets', 'rewrap', '--old-key-file', str(old))

    assert (status, out) == (2, '')
    assert err == ('memagg-manage: error: --old-key-file %s is open to group '
                   'or others (mode 0644); run "chmod 600 %s" (and chown it '
                   'to the user memagg runs as)\n' % (old, old))
