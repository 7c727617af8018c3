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

"""The ``openstack memagg`` commands, run as the real ``openstack`` console
script against the shared deployment (memagg-api behind Keystone, found in
its catalog): each command, the formatters, paging, filters, microversions,
and errors as one line with a non-zero exit."""
import json
import os
import subprocess
import sys
import uuid

import pytest
import yaml

from memagg.tests import polling

pytestmark = [pytest.mark.functional, pytest.mark.slow]

OPENSTACK = os.path.join(os.path.dirname(sys.executable), 'openstack')
PLANNED_TIMEOUT = 60


def openstack(deployment, who, *args):
    """Run ``openstack memagg ARGS`` as account ``who`` (admin, member);
    the CompletedProcess. Global options are given as ``--os-NAME=VALUE``
    among ARGS."""
    env = {k: v for k, v in os.environ.items() if not k.startswith('OS_')}
    env.update(deployment.keystone.os_env(getattr(deployment.keystone, who)))
    options = [a for a in args if a.startswith('--os-')]
    command = [a for a in args if not a.startswith('--os-')]
    return subprocess.run([OPENSTACK] + options + ['memagg'] + command,
                          env=env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


def ok(deployment, who, *args):
    """The stdout of a command that must succeed."""
    result = openstack(deployment, who, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def as_json(deployment, who, *args):
    return json.loads(ok(deployment, who, *(args + ('-f', 'json'))))


def one_line_error(deployment, who, *args):
    """The error of a command that must fail: one line, no traceback."""
    result = openstack(deployment, who, *args)
    assert result.returncode != 0
    assert result.stdout == ''
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert 'Traceback' not in result.stderr
    return result.stderr.strip()


def test_hosts_in_every_format(deployment):
    hosts = as_json(deployment, 'admin', 'host', 'list')
    by_name = {h['name']: h for h in hosts}
    assert set(deployment.hosts) <= set(by_name)
    assert by_name['compute-1']['memory_mb'] == 65536
    assert by_name['compute-1']['lendable_mb'] == 4096
    # As the database keeps it (six digits on MariaDB's FLOAT).
    assert abs(by_name['compute-1']['cpu_util'] - 1 / 3) < 1e-6

    table = ok(deployment, 'admin', 'host', 'list')
    assert '| name ' in table and '| compute-2 ' in table
    row = next(line for line in table.splitlines() if '| compute-1 ' in line)
    assert '| 0.33 ' in row and '0.333' not in row, row
    shown = yaml.safe_load(ok(deployment, 'admin', 'host', 'show',
                              'compute-1', '-f', 'yaml'))
    assert (shown['name'], shown['reserved_mb'], shown['vcpus']) == (
        'compute-1', 1024, 16)
    assert ok(deployment, 'admin', 'host', 'show', 'compute-1', '-f',
              'value', '-c', 'memory_mb') == '65536\n'


def test_instances_and_their_wss(deployment):
    admin, member = (deployment.instances['admin'],
                     deployment.instances['member'])
    listed = as_json(deployment, 'admin', 'instance', 'list', '--long')
    assert set(admin + member) <= {i['uuid'] for i in listed}
    assert all('remote_mb' in i for i in listed)

    instance = as_json(deployment, 'admin', 'instance', 'show', member[1])
    assert (instance['uuid'], instance['host'], instance['booked_mb'],
            instance['current_mb'], instance['remote_mb']) == (
        member[1], 'compute-2', 4096, 2304, 0)

    samples = as_json(deployment, 'admin', 'instance', 'wss', 'list',
                      member[0])
    assert len(samples) == 6
    assert [s['sampled_at'] for s in samples] == sorted(
        s['sampled_at'] for s in samples)
    assert {s['wss_mb'] for s in samples} == {1024 + 8 * m
                                              for m in range(6)}


def test_a_member_sees_its_own_project_only(deployment):
    listed = ok(deployment, 'member', 'instance', 'list', '-f', 'value',
                '-c', 'uuid').split()
    assert sorted(listed) == sorted(deployment.instances['member'])


def test_a_filter_narrows_the_list(deployment):
    on_two = ok(deployment, 'admin', 'instance', 'list', '--host',
                'compute-2', '--sort-key', 'name', '--sort-dir', 'desc',
                '-f', 'value', '-c', 'uuid', '-c', 'name').splitlines()
    names = [line.split()[1] for line in on_two]
    assert set(deployment.instances['member']) <= {
        line.split()[0] for line in on_two}
    assert not set(deployment.instances['admin']) & {
        line.split()[0] for line in on_two}
    assert names == sorted(names, reverse=True)


def test_pages_with_limit_and_marker(deployment):
    every = ok(deployment, 'admin', 'instance', 'list', '-f', 'value', '-c',
               'uuid').split()
    first = ok(deployment, 'admin', 'instance', 'list', '--limit', '1',
               '-f', 'value', '-c', 'uuid').split()
    second = ok(deployment, 'admin', 'instance', 'list', '--limit', '1',
                '--marker', first[0], '-f', 'value', '-c', 'uuid').split()

    assert len(every) >= 5
    assert first == every[:1] and second == every[1:2]


def test_reservoir_grants_migrations_services(deployment):
    reservoir = as_json(deployment, 'admin', 'reservoir', 'show')
    assert reservoir['lent_mb'] >= 256
    assert set(deployment.hosts) <= {h['host'] for h in reservoir['hosts']}

    [grant_uuid] = deployment.grants
    assert grant_uuid in ok(deployment, 'admin', 'grant', 'list', '--status',
                            'active', '-f', 'value', '-c', 'uuid').split()
    grant = as_json(deployment, 'admin', 'grant', 'show', grant_uuid)
    assert (grant['granted_mb'], grant['slab_size_mb']) == (256, 128)
    assert [(s['index'], s['donor_host'], s['endpoint'], s['tier'])
            for s in grant['slabs']] == [
        (i, 'compute-2', 'tcp://compute-2:7450', 'l1') for i in range(2)]
    listed = as_json(deployment, 'admin', 'grant', 'list', '--long')
    assert [(g['l1_mb'], g['l2_mb']) for g in listed
            if g['uuid'] == grant_uuid] == [(256, 0)]

    [migration_uuid] = deployment.migrations
    migrations = as_json(deployment, 'admin', 'migration', 'list',
                         '--source-host', 'compute-2', '--long')
    [migration] = [m for m in migrations if m['uuid'] == migration_uuid]
    assert (migration['bytes_transferred'], migration['downtime_ms'],
            migration['remote_share']) == (512 * 2 ** 20, 35.0, 0.25)
    assert as_json(deployment, 'admin', 'migration', 'show',
                   migration_uuid)['duration_s'] == 4.2

    services = as_json(deployment, 'admin', 'service', 'list', '--binary',
                       'memagg-scheduler', '--enabled')
    assert services and all(s['binary'] == 'memagg-scheduler'
                            and s['disabled'] is False for s in services)
    assert 'up' in {s['state'] for s in services}


def test_an_audit_is_created_planned_and_listed(deployment):
    created = as_json(deployment, 'admin', 'audit', 'create',
                      '--memory-basis', 'booked',
                      '--parameter', 'underload_require=either')
    assert (created['state'], created['memory_basis'],
            created['parameters']) == ('pending', 'booked',
                                       {'underload_require': 'either'})

    def planned():
        audit = as_json(deployment, 'admin', 'audit', 'show',
                        created['uuid'])
        return audit if audit['state'] in ('recommended', 'failed') else None

    audit = polling.wait_for(planned, PLANNED_TIMEOUT, interval=0.5,
                             message='audit %s planned' % created['uuid'])
    assert audit['reason']
    assert [a['sequence'] for a in audit['actions']] == list(
        range(len(audit['actions'])))
    assert created['uuid'] in ok(deployment, 'admin', 'audit', 'list',
                                 '--state', audit['state'], '-f', 'value',
                                 '-c', 'uuid').split()


def test_a_migration_is_created_and_ends_through_the_compute_api(
        deployment):
    # The last admin instance (compute-1) is this test's own: the tempest
    # plug-in's create moves another one.
    vm = deployment.instances['admin'][-1]
    source, dest = deployment.hosts
    created = as_json(deployment, 'admin', 'migration', 'create', vm,
                      '--dest-host', dest)
    assert (created['instance_uuid'], created['source_host'],
            created['dest_host'], created['status']) == (
        vm, source, dest, 'queued')

    def ended():
        migration = as_json(deployment, 'admin', 'migration', 'show',
                            created['uuid'])
        return migration if migration['status'] in (
            'succeeded', 'failed') else None

    migration = polling.wait_for(ended, PLANNED_TIMEOUT, interval=0.5,
                                 message='migration %s ended'
                                 % created['uuid'])
    # No Nova here: memagg-scheduler runs with the 'none' compute API
    # driver, which says it cannot live-migrate.
    assert migration['status'] == 'failed'
    assert 'the none compute API driver cannot live-migrate VM %s' % vm in \
        migration['error']
    assert migration['attempts'] == 1


def test_a_migration_to_the_instance_own_host_is_a_400(deployment):
    error = one_line_error(deployment, 'admin', 'migration', 'create',
                           deployment.instances['admin'][-1],
                           '--dest-host', deployment.hosts[0])

    assert error.startswith('HTTP 400: ') and "'dest_host'" in error


def test_version_1_0_hides_later_fields(deployment):
    instance = as_json(deployment, 'admin', '--os-memagg-api-version=1.0',
                       'instance', 'show', deployment.instances['admin'][0])

    assert instance['uuid'] == deployment.instances['admin'][0]
    assert 'remote_mb' not in instance and 'wss_maxavg_mb' not in instance


def test_host_reclaim_shows_from_1_11(deployment):
    """instance show, instance list --long and instance wss list --long
    show host reclaim from 1.11 (and at the client's default, its latest)
    and hide it at 1.10."""
    uuid_ = deployment.instances['member'][1]
    reclaim = ('reclaimed_mb', 'promotion_rate', 'promotion_slo',
               'reclaim_mechanism')
    shown = as_json(deployment, 'admin', '--os-memagg-api-version=1.11',
                    'instance', 'show', uuid_)
    assert (shown['reclaimed_mb'], shown['promotion_rate'],
            shown['reclaim_mechanism']) == (256, 4.0, 'madvise')
    assert shown['promotion_slo'] == pytest.approx(0.002 * 1228 * 256)
    listed = {i['uuid']: i for i in as_json(
        deployment, 'admin', 'instance', 'list', '--long')}
    assert {k: listed[uuid_][k] for k in reclaim} == {
        k: shown[k] for k in reclaim}
    history = as_json(deployment, 'admin', 'instance', 'wss', 'list',
                      uuid_, '--long')
    assert {(s['reclaimed_mb'], s['promotion_rate']) for s in history} == {
        (256, 4.0)}

    older = as_json(deployment, 'admin', '--os-memagg-api-version=1.10',
                    'instance', 'show', uuid_)
    assert not set(reclaim) & set(older)
    assert {k: v for k, v in shown.items()
            if k not in reclaim + ('promotion_rate_pct',)} == older
    for row in as_json(deployment, 'admin', '--os-memagg-api-version=1.10',
                       'instance', 'wss', 'list', uuid_, '--long'):
        assert not set(reclaim) & set(row)


def test_an_unsupported_version_fails_cleanly(deployment):
    error = one_line_error(deployment, 'admin',
                           '--os-memagg-api-version=2.7', 'host', 'list')

    assert error.startswith('--os-memagg-api-version 2.7 is not supported: '
                            'give one of 1, 1.0')


def test_a_member_listing_hosts_is_refused_in_one_line(deployment):
    error = one_line_error(deployment, 'member', 'host', 'list')

    assert error.startswith('HTTP 403: ')
    assert 'memagg:host:list' in error and '(request req-' in error


def test_an_unknown_uuid_is_not_found_in_one_line(deployment):
    missing = str(uuid.uuid4())

    error = one_line_error(deployment, 'admin', 'audit', 'show', missing)

    assert error.startswith('HTTP 404: ') and missing in error


def test_bad_input_is_a_400_naming_the_field(deployment):
    error = one_line_error(deployment, 'admin', 'grant', 'create',
                           '--instance', deployment.instances['admin'][0],
                           '--size-mb', '0')

    assert error.startswith('HTTP 400: ')
    assert "'size_mb'" in error and 'give a value from 1' in error
