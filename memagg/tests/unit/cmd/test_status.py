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

"""memagg-status upgrade check: each check in-process on SQLite, and the
command as a process for its exit codes (0 success, 1 warning, 2 failure)."""
import json

from oslo_upgradecheck import upgradecheck
import pytest

from memagg.cmd import status
from memagg.db import facade as db_facade
from memagg.db import migration
from memagg.db import secret_box
from memagg.db.sqlalchemy import models
from memagg.tests import grant_key
from memagg.tests.unit.cmd import tools
from memagg.tests.unit.db import rows

Code = upgradecheck.Code


@pytest.fixture
def use_database(conf):
    """Point memagg.db at a URL of the test's choosing."""
    def use(url, **options):
        conf.config(connection=url, group='database', **options)
        db_facade.dispose()
    yield use
    db_facade.dispose()


def _service(host, binary, seconds_ago, **values):
    return dict(host=host, binary=binary, topic=binary,
                last_seen_at=rows.ago(seconds=seconds_ago), **values)


def test_schema_at_head_succeeds(sqlite_db):
    result = status.Checks()._check_schema()

    assert result.code == Code.SUCCESS
    assert migration.head() in result.details


@pytest.mark.parametrize('made, why', [
    (False, 'the file does not exist'),
    (True, 'it has no memagg schema'),
])
def test_no_database_fails_with_the_fix_creating_nothing(
        use_database, tmp_path, made, why):
    path = tmp_path / 'memagg.sqlite'
    if made:
        path.touch()
    use_database('sqlite:///%s' % path)

    schema = status.Checks()._check_schema()
    services = status.Checks()._check_services()
    secrets = status.Checks()._check_grant_secrets()

    assert schema.code == Code.FAILURE
    assert schema.details == (
        'No memagg database at sqlite:///%s ([database] connection): %s; '
        'run "memagg-manage db upgrade" to set it up.' % (path, why))
    assert services.code == secrets.code == Code.WARNING
    assert 'Not checked' in services.details
    assert path.exists() == made


def test_schema_behind_code_fails_with_the_fix(sqlite_db, monkeypatch):
    current = migration.version()
    monkeypatch.setattr(migration, 'head', lambda: '9999')

    result = status.Checks()._check_schema()

    assert result.code == Code.FAILURE
    assert result.details == ('The schema is at revision %s, this code '
                              'needs 9999: run "memagg-manage db upgrade".'
                              % current)


def test_no_services_is_a_warning(sqlite_db):
    result = status.Checks()._check_services()

    assert result.code == Code.WARNING
    assert 'No memagg-scheduler or memagg-compute service' in result.details


def test_all_services_up_succeeds(sqlite_db, conf):
    conf.config(service_down_time=60)
    rows.insert(models.Service,
                _service('ctl', 'memagg-scheduler', 5),
                _service('cn1', 'memagg-compute', 50),
                # Neither a watched binary nor enabled: they do not count.
                _service('ctl', 'memagg-api', 9999),
                _service('cn2', 'memagg-compute', 9999, disabled=True))

    result = status.Checks()._check_services()

    assert (result.code, result.details) == (Code.SUCCESS, '2 services up.')


def test_down_services_are_named(sqlite_db, conf):
    conf.config(service_down_time=60)
    rows.insert(models.Service,
                _service('ctl', 'memagg-scheduler', 5),
                _service('cn1', 'memagg-compute', 70),
                _service('cn2', 'memagg-compute', 3600))

    result = status.Checks()._check_services()

    assert result.code == Code.WARNING
    assert result.details.startswith(
        '2 of 3 services sent no heartbeat in the last [DEFAULT] '
        'service_down_time (60 s): memagg-compute on cn1, memagg-compute on '
        'cn2.')


def test_grant_secrets_under_the_current_key_succeed(sqlite_db):
    rows.insert(models.Grant, {}, {})
    key_id = secret_box.load_key(grant_key.path()).key_id

    result = status.Checks()._check_grant_secrets()

    assert (result.code, result.details) == (
        Code.SUCCESS, '2 grant secrets wrapped with key %s.' % key_id)


def test_clear_and_old_key_grant_secrets_fail_with_the_fix(sqlite_db, conf,
                                                           tmp_path):
    rows.insert(models.Grant, {}, {}, dict(wrapped_secret='ab' * 32))
    old_id = secret_box.load_key(grant_key.path()).key_id
    new_path = str(tmp_path / 'new.key')
    new_id = secret_box.create_key_file(new_path).key_id
    conf.config(secret_key_file=new_path, group='database')

    result = status.Checks()._check_grant_secrets()

    assert (result.code, result.details) == (Code.FAILURE, (
        'Grant secrets not under the key in [database] secret_key_file '
        '(%s): 1 stored in clear (run "memagg-manage grant_secrets '
        'rewrap"); 2 wrapped with other keys (%s; run "memagg-manage '
        'grant_secrets rewrap --old-key-file OLD_KEY_FILE").'
        % (new_id, old_id)))


def test_an_unusable_key_file_fails(sqlite_db, conf, tmp_path):
    conf.config(secret_key_file=str(tmp_path / 'absent.key'),
                group='database')

    result = status.Checks()._check_grant_secrets()

    assert result.code == Code.FAILURE
    assert result.details.startswith('[database] secret_key_file %s does '
                                     'not exist' % (tmp_path / 'absent.key'))


def test_unreachable_database_fails(use_database):
    use_database('mysql+pymysql://root@127.0.0.1:1/memagg', max_retries=0)

    result = status.Checks()._check_schema()

    assert result.code == Code.FAILURE
    assert 'check [database] connection' in result.details


@pytest.mark.slow
def test_exit_codes_follow_the_worst_check(use_database, tmp_path):
    url = 'sqlite:///%s' % (tmp_path / 'memagg.sqlite')
    config = tools.write_config(tmp_path, url, service_down_time=60)

    def check():
        return tools.run('memagg-status', config, 'upgrade', 'check',
                         '--json')

    empty = check()
    tools.run('memagg-manage', config, 'db', 'upgrade')
    no_services = check()
    use_database(url)
    rows.insert(models.Service, _service('ctl', 'memagg-scheduler', 1))
    all_up = check()

    for process, code in ((empty, 2), (no_services, 1), (all_up, 0)):
        assert process.returncode == code, process.stderr
        report = json.loads(process.stdout)
        assert max(c['result'] for c in report['checks']) == code
    assert [c['check'] for c in json.loads(all_up.stdout)['checks']] == [
        'Database schema', 'Services', 'Grant secrets']


@pytest.mark.slow
def test_table_output_and_bad_command(tmp_path):
    config = tools.write_config(
        tmp_path, 'sqlite:///%s' % (tmp_path / 'memagg.sqlite'))

    table = tools.run('memagg-status', config, 'upgrade', 'check')
    bad = tools.run('memagg-status', config, 'upgrade', 'chek')

    assert table.returncode == 2
    assert 'Check: Database schema' in table.stdout
    assert 'Result: Failure' in table.stdout
    assert bad.returncode == 2
    assert bad.stderr.splitlines() == [
        "memagg-status: error: argument check: 'chek' is not a command; use "
        '"memagg-status upgrade check"']
