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

"""memagg-aio as a new user runs it: one process, API answering, this host
and the libvirt test driver's domain listed, a clean exit on SIGTERM; and
with --demo, from the image cache, behind its own Keystone: its guests
shown at work within three minutes to the admin of the openrc file it
writes, an audit created and shown with the ``openstack`` CLI, the
browser suite's checks of the panels passing on it, and everything gone
after Ctrl-C."""
import configparser
import datetime
import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from keystoneauth1.identity import v3 as ks_identity
from keystoneauth1 import session as ks_session
import libvirt
import pytest
from memaggclient import client as memagg_client

from memagg.api import microversion
from memagg.cmd import aio
from memagg.compute import swapd as swapd_client
from memagg.dashboard import charts
from memagg.demo import cloud as demo_cloud
from memagg.demo import guest as demo_guest
from memagg.demo import keystone as demo_keystone
from memagg.drivers.hypervisor import libvirt_driver
from memagg.drivers.reclaim import base as reclaim_base
from memagg.tests.functional import guest_fixtures
from memagg.tests.functional import horizon as horizon_browser
from memagg.tests.functional import panel_checks
from memagg.tests.functional import service_procs
from memagg.tests import polling

# The host lane (memagg/tests/lanes.py): swapd's default socket and port.
pytestmark = [pytest.mark.functional, pytest.mark.slow, pytest.mark.host]

TEST_DOMAIN_UUID = '6695eb01-f6a4-8304-79aa-97f2502e193f'

# The demo's promise: every guest shown at work within 3 minutes of the
# command on a set-up machine. Counted from the API's line, which comes
# after the guest image is built when it was not cached yet.
SHOWN_WITHIN = 180


def _get(url, session=None):
    """The JSON of a GET of ``url``: without a token, or through a
    keystoneauth1 ``session``."""
    if session is not None:
        # The newest microversion: instances' reclaimed_mb is 1.11's.
        return session.get(url, timeout=10, headers={
            microversion.HEADER: microversion.SERVICE_TYPE + ' latest'}).json()
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        return json.load(response)


def _in_log(proc, found, timeout, message, interval=0.1):
    """``found(log)``'s first true value as memagg-aio's log grows; fails
    with the log when memagg-aio exits first, and with where its threads
    wait too when the deadline passes."""
    try:
        value = polling.wait_for(
            lambda: found(proc.log()) or not proc.alive(), timeout,
            interval=interval, message=message)
    except AssertionError as exc:
        raise AssertionError('%s\nwhere memagg-aio waits:\n%s\nlog:\n%s' % (
            exc, service_procs.kernel_waits(proc.proc.pid),
            proc.log())) from None
    assert proc.alive(), proc.log()
    return value


def _api_url(proc, timeout):
    """The API's URL, from memagg-aio's line naming it."""
    return _in_log(proc, lambda log: re.search(r'^API: (http://\S+?)/?$',
                                               log, re.M),
                   timeout, 'the API URL line').group(1)


def test_aio_serves_this_host_and_stops_on_sigterm(tmp_path, monkeypatch):
    state = tmp_path / 'state'
    # A new user's environment: state under $XDG_STATE_HOME by default.
    monkeypatch.setenv('XDG_STATE_HOME', str(state))
    config = service_procs.write_config(tmp_path / 'aio.conf', {
        'DEFAULT': {'report_interval': 1},
        # The domains of this test only (it boots none): the parallel
        # lane's guests run on this libvirtd meanwhile.
        'compute': {'collect_interval': 1,
                    'domain_name_regex': 'memagg-aio-%d-' % os.getpid()},
    })
    proc = service_procs.Process(
        'memagg-aio', ['--port', '0', '--config-file', str(config)],
        tmp_path / 'aio.log')
    try:
        url = _api_url(proc, 60)
        assert 'curl -s %s/v1/hosts' % url in proc.log()
        assert os.path.exists(state / 'memagg' / 'memagg.sqlite')
        # The key wrapping the grants' secrets, made beside the database.
        assert os.stat(state / 'memagg' / 'secret.key').st_mode & 0o777 == (
            0o600)

        hostname = socket.gethostname()
        hosts = polling.wait_for(
            lambda: [h for h in _get(url + '/v1/hosts')['hosts']
                     if h['name'] == hostname], 60, message='this host')
        assert hosts[0]['memory_mb'] > 0
        if libvirt_driver.answers('qemu:///system'):
            # A running libvirtd wins over the test driver: no 'test' domain.
            assert 'libvirt qemu:///system' in proc.log(), proc.log()
            return
        instances = polling.wait_for(
            lambda: [i for i in _get(url + '/v1/instances')['instances']
                     if i['uuid'] == TEST_DOMAIN_UUID], 60,
            message="the test driver's domain")
        assert (instances[0]['host'], instances[0]['name']) == (hostname,
                                                                'test')
    finally:
        code = proc.stop()
        outlived = _kill_swapd_left(state / 'memagg' / 'swapd.pid')
    assert code == 0, proc.log()
    assert 'memagg-compute on %s stopped' % socket.gethostname() in proc.log()
    # memagg-aio's swapd was its state directory's, on this host only, and
    # stopped with it.
    assert 'it stops with memagg-aio' in proc.log(), proc.log()
    assert _swapd_config(state) == (
        str(state / 'memagg' / 'swapd' / 'control.sock'),
        'tcp://127.0.0.1:7450')
    assert outlived is None, 'memagg-swapd %d outlived memagg-aio' % outlived


#: The demo guest that outgrows its RAM into remote memory.
_REMOTE = next(w for w in demo_cloud.WORKLOADS if w.grant_mb)


def _within(estimate, truth):
    """The guest tests' tolerance: +-20 % or +-24 MiB, whichever is wider
    (test_guest_wss.py)."""
    return estimate is not None and abs(estimate - truth) <= max(
        0.2 * truth, 24)


def _openrc(path):
    """The OS_* variables an openrc file exports."""
    return dict(re.findall(r"^export (OS_\w+)='([^']*)'$", path.read_text(),
                           re.M))


def _session(env):
    """A keystoneauth1 session logged in as an openrc file says."""
    return ks_session.Session(auth=ks_identity.Password(
        auth_url=env['OS_AUTH_URL'], username=env['OS_USERNAME'],
        password=env['OS_PASSWORD'], project_name=env['OS_PROJECT_NAME'],
        user_domain_id='default', project_domain_id='default'))


def _openstack(env, *args):
    """``openstack memagg ARGS -f json`` as the openrc ``env`` logs in."""
    result = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), 'openstack'),
         'memagg'] + list(args) + ['-f', 'json'],
        env=dict(os.environ, **env), capture_output=True, text=True,
        timeout=60)
    assert result.returncode == 0, (args, result.stderr)
    return json.loads(result.stdout)


def _demo_shows(url, since, session, log):
    """What each demo guest shows, by workload, when all show it in the
    samples taken ``since`` (once their workloads were in place): the
    newest estimate within the tolerance of a hot set it had, and its
    balloon at its target (or, without a balloon, left alone, its idle
    memory reclaimed; or, outgrowing its RAM, an active grant it wrote
    beyond its RAM into, as memagg-aio's ``log()`` says); else None."""
    by_name = {i['name']: i for i in _get(url + '/v1/instances',
                                          session)['instances']}
    seen = {}
    for workload in demo_cloud.WORKLOADS:
        instance = by_name.get(workload.name)
        if instance is None:
            return None
        if workload.grant_mb:
            grants = [g for g in _get(url + '/v1/grants', session)['grants']
                      if g['instance_uuid'] == instance['uuid']
                      and g['status'] == 'active']
            if not (grants and '%s wrote %d MiB' % (
                    workload.name, workload.fill_mb) in log()
                    and instance['updated_at'] >= since
                    and _within(instance['wss_mb'], workload.hot_mb[0])):
                return None
            seen[workload.name] = [(g['uuid'], g['granted_mb'])
                                   for g in grants]
            seen[workload.name + ' wss_mb'] = instance['wss_mb']
            continue
        if workload.balloon == 'none':
            # Its balloon left alone (no samples: its report), its idle
            # memory paged out by host reclaim.
            last = instance
            if not (last['updated_at'] >= since
                    and last['estimator'].startswith('unmanaged')
                    and last['current_mb'] == workload.memory_mb
                    and (last['reclaimed_mb'] or 0) > 0
                    and _within(last['wss_mb'], workload.hot_mb[0])):
                return None
            seen[workload.name] = (last['wss_mb'], last['reclaimed_mb'],
                                   last['current_mb'], last['estimator'])
            continue
        samples = _get('%s/v1/instances/%s/wss?since=%s' % (
            url, instance['uuid'], since), session)['wss_samples']
        if not samples:
            return None
        last = samples[-1]
        if not (any(_within(last['wss_mb'], hot)
                    for hot in workload.hot_mb)
                and last['target_mb'] is not None
                and last['target_mb'] < workload.memory_mb
                and last['current_mb'] == last['target_mb']):
            return None
        seen[workload.name] = (last['wss_mb'], last['target_mb'],
                               last['current_mb'], last['estimator'])
    return seen


def _the_panels_show_the_demo(horizon_url, admin, session, grant_uuid,
                              screenshots):
    """Admin → Memory of the demo's Horizon, logged in as the openrc
    ``admin`` (``session`` its keystoneauth1 session): the checks the
    browser suite makes of its seeded cloud (panel_checks) on this host and
    the donor, a guest's chart by its name, the grant with its donor."""
    screenshots.mkdir()
    admin_api = memagg_client.Client(session, interface='public',
                                     region_name=demo_keystone.REGION)
    browser = horizon_browser.Browser(horizon_url, screenshots)
    try:
        account = demo_keystone.Account(admin['OS_USERNAME'],
                                        admin['OS_PASSWORD'],
                                        admin['OS_PROJECT_NAME'])
        browser.login(account, '/admin/memory/')
        donor = socket.gethostname() + '-donor'
        _, pool = panel_checks.host_bars(browser, admin_api,
                                         [socket.gethostname(), donor])
        assert pool[donor]['lent_mb'] == _REMOTE.grant_mb, pool
        browser.screenshot('demo-admin-memory', [])
        panel_checks.cloud_over_time(browser, admin_api, '1h')
        steady = next(i for i in admin_api.instances.list().all_items()
                      if i['name'] == demo_cloud.PREFIX + 'steady')
        browser.open('/admin/memory/instances/%s/?range=1h' % steady['uuid'])
        assert browser.find('#memagg-instance-name').text == steady['name']
        assert browser.find_all(
            '#memagg-history g[data-series="wss_mb"] circle')
        browser.screenshot('demo-instance', [
            c for key, _, c in charts.HISTORY_SERIES
            if key in ('wss_mb', 'target_mb')])
        browser.open('/admin/memory/reservoir/')
        row = '.memagg-grants tr[data-uuid="%s"]' % grant_uuid
        assert browser.find(row + ' .memagg-donors').text == donor
        assert browser.find(row + ' .memagg-grant-instance').text == (
            _REMOTE.name)
        panel_checks.audit_from_the_panel(browser, admin_api)
    finally:
        browser.quit()


def _demo_domains(conn):
    return [d.name() for d in conn.listAllDomains()
            if d.name().startswith(demo_cloud.PREFIX)]


def test_the_demo_shows_memagg_at_work_and_ctrl_c_stops_it(tmp_path):
    conn = libvirt.open(guest_fixtures.ensure_libvirtd())
    assert _demo_domains(conn) == []
    workdirs = set(glob.glob('/var/tmp/memagg-demo-*'))
    state = tmp_path / 'state'
    # A second run: the image is in the cache (built here, as by a first
    # run, when it was not).
    demo_guest.build()
    started = time.monotonic()
    proc = service_procs.Process(
        'memagg-aio', ['--demo', '--port', '0', '--state-dir', str(state)],
        tmp_path / 'aio.log')
    try:
        url = _api_url(proc, 120)
        shown_at = time.monotonic()
        assert re.search(r'^Guest image: %s/\S+ \(from the cache\)$'
                         % re.escape(demo_guest.CACHE), proc.log(),
                         re.M), proc.log()
        # Printed once the services run, after the API's line.
        openrc = state / 'admin-openrc'
        _in_log(proc, lambda log: re.search(
            r'^Watch: \. %s && watch \S+/openstack memagg instance list '
            r'--long$' % re.escape(str(openrc)), log, re.M),
            60, 'the line saying how to watch')
        assert 'Try: curl' not in proc.log()
        print('second run: API %.1f s, guests booting %.1f s after the '
              'command' % (shown_at - started, time.monotonic() - started))
        admin = _openrc(openrc)
        assert oct(openrc.stat().st_mode & 0o777) == '0o600'
        assert re.search(r'^Keystone: %s \(admin: admin / %s, project admin; '
                         r'member: tenant-member / \S+, project '
                         r'memagg-tenant\)$' % (
                             re.escape(admin['OS_AUTH_URL']),
                             re.escape(admin['OS_PASSWORD'])),
                         proc.log(), re.M), proc.log()
        session = _session(admin)
        # The API checks tokens: none is refused.
        with pytest.raises(urllib.error.HTTPError) as refused:
            _get(url + '/v1/instances')
        assert refused.value.code == 401
        # Each guest is up once its hot set is in place: what memagg shows
        # of it counts from then on.
        _in_log(proc, lambda log: all('%s is up' % w.name in log
                                      for w in demo_cloud.WORKLOADS),
                SHOWN_WITHIN, 'every demo guest up', interval=0.5)
        since = datetime.datetime.now(datetime.timezone.utc).strftime(
            '%Y-%m-%dT%H:%M:%SZ')
        try:
            seen = polling.wait_for(
                lambda: _demo_shows(url, since, session, proc.log),
                max(SHOWN_WITHIN - (time.monotonic() - shown_at), 1),
                interval=1, message='every demo guest shown at work within '
                '%d s of the API' % SHOWN_WITHIN)
        except AssertionError:
            raise AssertionError('instances: %s\nlog:\n%s' % (
                _get(url + '/v1/instances', session)['instances'],
                proc.log()))
        took = time.monotonic() - shown_at
        print('demo shown at work %.0f s after the API came up: %s'
              % (took, seen))
        assert sorted(_demo_domains(conn)) == sorted(
            w.name for w in demo_cloud.WORKLOADS)
        # The guest's pages went through memagg-swapd to the donor.
        (grant_uuid, granted_mb), = seen[_REMOTE.name]
        assert granted_mb == _REMOTE.grant_mb
        stats = swapd_client.SwapdClient(
            str(state / 'swapd' / 'control.sock')).export_stats(grant_uuid)
        assert stats['write_bytes'] > 0 and stats['remote_errors'] == 0, (
            stats)
        shown = _openstack(admin, 'grant', 'show', grant_uuid)
        assert shown['status'] == 'active', shown
        assert {slab['donor_host'] for slab in shown['slabs']} == {
            socket.gethostname() + '-donor'}, shown
        # The CLI, through the catalog of the demo's Keystone.
        audit = _openstack(admin, 'audit', 'create')
        shown = _openstack(admin, 'audit', 'show', audit['uuid'])
        assert shown['uuid'] == audit['uuid'], shown
        horizon_url = _in_log(proc, lambda log: re.search(
            r'^Horizon: (http://\S+)/admin/memory/ \(log in with '
            r'either\)$', log, re.M), 10, 'the Horizon line').group(1)
        _the_panels_show_the_demo(
            horizon_url, admin, session, grant_uuid=grant_uuid,
            screenshots=tmp_path / 'screenshots')
    finally:
        code = proc.stop(timeout=60, sig=signal.SIGINT)
        outlived = [pid for pid in (
            _kill_swapd_left(state / 'swapd.pid'),
            _kill_swapd_left(state / 'donor-swapd.pid')) if pid]
        left = _demo_domains(conn)
        for name in left:
            conn.lookupByName(name).destroy()
        conn.close()
    assert code == 0, proc.log()
    assert left == [], proc.log()
    assert outlived == [], 'memagg-swapds %s outlived memagg-aio' % outlived
    assert set(glob.glob('/var/tmp/memagg-demo-*')) == workdirs
    # The swap file it added for host reclaim, if any, is off.
    assert not [d for d in reclaim_base.swap_devices()
                if d.startswith('/var/tmp/memagg-demo-')]
    # Nothing it started still listens: the API, its Keystone and Horizon,
    # both memagg-swapds.
    for served in (url + '/v1/hosts', admin['OS_AUTH_URL'], horizon_url):
        with pytest.raises(OSError):
            _get(served)
    for listen in (aio.SWAPD_LISTEN, aio.DONOR_LISTEN):
        host, port = listen[len('tcp://'):].rsplit(':', 1)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((host, int(port)), timeout=10).close()


def _swapd_config(state):
    config = configparser.ConfigParser(interpolation=None)
    config.read(state / 'memagg' / 'swapd.conf')
    return config['swapd']['control_socket'], config['swapd']['listen']


def _kill_swapd_left(pid_file):
    """The pid of a memagg-swapd memagg-aio left running, killed; None
    when it stopped with memagg-aio."""
    try:
        pid = int(pid_file.read_text())
    except FileNotFoundError:
        return None
    if polling.gone(pid):
        return None
    os.kill(pid, signal.SIGKILL)
    polling.wait_for(lambda: polling.gone(pid), 30,
                     message='memagg-swapd %d killed' % pid)
    return pid


def test_the_demo_without_keystone_says_how_to_get_it(tmp_path):
    state = tmp_path / 'state'
    result = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), 'memagg-aio'),
         '--demo', '--state-dir', str(state)],
        env=dict(os.environ, MEMAGG_KEYSTONE_VENV=str(tmp_path / 'none')),
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        'memagg-aio: error: --demo needs a Keystone in %s: run '
        'tools/setup.sh (it installs one there), or set '
        'MEMAGG_KEYSTONE_VENV' % (tmp_path / 'none')), result.stderr
    # It stopped before it started anything.
    assert not (state / 'keystone').exists()
    assert not (state / 'swapd.pid').exists()


def test_aio_refuses_an_unwritable_state_dir(tmp_path):
    blocker = tmp_path / 'file'
    blocker.write_text('not a directory')
    proc = service_procs.Process(
        'memagg-aio', ['--state-dir', str(blocker / 'state')],
        tmp_path / 'aio.log')
    proc.proc.wait(60)
    assert proc.stop() != 0
    lines = proc.log().strip().splitlines()
    assert lines[-1].startswith('memagg-aio: error: cannot use --state-dir')
