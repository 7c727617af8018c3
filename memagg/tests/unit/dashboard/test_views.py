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

"""The panels' views through Django's test client, with Horizon's test
helpers (a logged-in user and its catalog) and memagg's Client replaced at
its class: every page shows what the API answered, and policy decides
what a user sees and may do."""
import datetime
import pathlib
import tempfile
import unittest
from unittest import mock

from django.urls import reverse
from django.utils import timezone
from keystoneauth1 import exceptions as ks_exc
from openstack import exceptions as sdk_exc
from openstack_auth import policy as auth_policy
from openstack_dashboard.test import helpers
from openstack_dashboard.test.test_data import exceptions as \
    test_data_exceptions

from memaggclient import client as memagg_client
from memaggclient import exceptions as client_exc

ENDPOINT = 'http://memagg.example.com:8780'
CATALOG_ENTRY = {
    'type': 'memory-aggregation', 'name': 'memagg', 'endpoints_links': [],
    'endpoints': [{'region': 'RegionOne', 'interface': interface,
                   'url': ENDPOINT}
                  for interface in ('admin', 'internal', 'public')]}
VM = '6c7e1a8e-1111-4a53-9d5c-4a4ef1f7c001'
AUDIT = '0a9d1c7e-2222-4c1b-8a43-3b8f0a2d4e01'
GRANT = 'f3b8e2d1-3333-4e55-b0b2-9a8c7d6e5f01'
# What Horizon's test data replaces on exception classes.
_STUBBED = ('__init__', '__str__', 'silence_logging')
_ABSENT = object()

HOST_USAGES = [
    {'host': 'compute-1', 'state': 'active', 'memory_mb': 65536,
     'reserved_mb': 1024, 'wss_maxavg_mb': 4000, 'booked_mb': 12288,
     'instances': 3, 'remote_mb': 256, 'reported_at': '2026-11-26T10:00:00Z',
     'lent_mb': 0, 'borrowed_mb': 256, 'free_reservoir_mb': 8192},
    {'host': 'compute-2', 'state': 'active', 'memory_mb': 65536,
     'reserved_mb': 1024, 'wss_maxavg_mb': 3000, 'booked_mb': 8192,
     'instances': 2, 'remote_mb': 0, 'reported_at': '2026-11-26T10:00:00Z',
     'lent_mb': 256, 'borrowed_mb': 0, 'free_reservoir_mb': 8192},
]
CLOUD = {'now': {'hosts': 2, 'active_hosts': 2, 'memory_mb': 131072,
                 'booked_mb': 20480, 'wss_maxavg_mb': 7000,
                 'freed_mb': 13480, 'hosts_needed': 1, 'emptiable_hosts': 1,
                 'lent_mb': 256},
         'since': '2026-11-25T10:00:00Z', 'until': '2026-11-26T10:00:00Z',
         'step_s': 1440, 'history': [
             {'at': '2026-11-26T09:36:00Z', 'hosts': 2, 'booked_mb': 20480,
              'wss_maxavg_mb': 7000, 'freed_mb': 13480, 'hosts_needed': 1,
              'emptiable_hosts': 1}]}
RESERVOIR = {'free_reservoir_mb': 16384, 'lendable_mb': 8192,
             'lent_mb': 256, 'borrowed_mb': 256, 'hosts': [
                 {'host': 'compute-1', 'free_reservoir_mb': 8192,
                  'lendable_mb': 4096, 'lent_mb': 0, 'borrowed_mb': 256},
                 {'host': 'compute-2', 'free_reservoir_mb': 8192,
                  'lendable_mb': 4096, 'lent_mb': 256, 'borrowed_mb': 0}]}
INSTANCE = {'uuid': VM, 'name': 'vm-one', 'host': 'compute-1',
            'project_id': '1', 'status': 'active', 'booked_mb': 4096,
            'current_mb': 2304, 'target_mb': 2048, 'wss_mb': 1152,
            'wss_maxavg_mb': 1228, 'estimator': 'badis',
            'local_policy': 'cmms/equal', 'cpu_util': 0.2, 'remote_mb': 256}
SAMPLES = [{'id': n, 'host': 'compute-1',
            'sampled_at': '2026-11-26T10:0%d:00Z' % n,
            'wss_mb': 1000 + 50 * n, 'wss_maxavg_mb': 1228,
            'current_mb': 2304, 'target_mb': 2048 + 100 * n,
            'estimator': 'badis'} for n in range(3)]
GRANT_DETAIL = {'uuid': GRANT, 'instance_uuid': VM,
                'consumer_host': 'compute-1', 'requested_mb': 512,
                'granted_mb': 256, 'status': 'active', 'slab_size_mb': 128,
                'partial': True, 'reason': 'donors had 256 MiB free',
                'created_at': '2026-11-26T09:00:00Z', 'updated_at': None,
                'slabs': [{'index': i, 'donor_host': 'compute-2',
                           'size_mb': 128, 'replica_host': None,
                           'status': 'active', 'endpoint': None}
                          for i in range(2)]}
AUDIT_DETAIL = {'uuid': AUDIT, 'state': 'recommended',
                'memory_basis': 'wss', 'reason': 'compute-2 underloaded',
                'auto_execute': False, 'unplaced': None,
                'created_at': '2026-11-26T10:00:00Z',
                'actions': [
                    {'sequence': 2, 'action_type': 'power_off',
                     'instance_uuid': None, 'source_host': 'compute-2',
                     'dest_host': None, 'reason': 'emptied',
                     'state': 'pending'},
                    {'sequence': 1, 'action_type': 'migrate',
                     'instance_uuid': VM, 'source_host': 'compute-2',
                     'dest_host': 'compute-1', 'reason': 'underload',
                     'state': 'pending'}]}


def page(items, next_marker=None):
    """A stand-in for memaggclient.base.Page."""
    return mock.Mock(items=items, next_marker=next_marker,
                     all_items=lambda: iter(items))


class MemaggViewTests(helpers.TestCase):
    """A project member's session, with memagg in its catalog."""

    # Horizon's sessions are signed cookies: these tests need no database.
    databases = set()

    def _setup_test_data(self):
        # Horizon's test data stubs the constructors of client exception
        # classes (keystoneauth's, openstacksdk's...) for good; the rest of
        # the suite, in the same process, needs them back.
        stubbed = []

        def stub(cls, *args, **kwargs):
            stubbed.append((cls, {name: cls.__dict__.get(name, _ABSENT)
                                  for name in _STUBBED}))
            return real_stub(cls, *args, **kwargs)

        def restore():
            for cls, saved in reversed(stubbed):
                for name, value in saved.items():
                    if value is _ABSENT:
                        delattr(cls, name)
                    else:
                        setattr(cls, name, value)

        real_stub = test_data_exceptions.create_stubbed_exception
        self.addCleanup(restore)
        with mock.patch.object(test_data_exceptions,
                               'create_stubbed_exception', stub):
            super()._setup_test_data()
        self.service_catalog.append(CATALOG_ENTRY)

    def setUp(self):
        super().setUp()
        patcher = mock.patch.object(memagg_client, 'Client')
        self.client_class = patcher.start()
        self.addCleanup(patcher.stop)
        self.memagg = self.client_class.return_value
        self.memagg.host_usages.page.return_value = page(HOST_USAGES)
        self.memagg.cloud_usage.get.return_value = CLOUD
        self.memagg.reservoir.get.return_value = RESERVOIR
        self.memagg.instances.list.return_value = page([INSTANCE])
        self.memagg.instances.get.return_value = INSTANCE
        # The newest first, as the panel asks.
        self.memagg.instances.wss.return_value = page(SAMPLES[::-1])
        self.memagg.grants.list.return_value = page([GRANT_DETAIL])
        self.memagg.grants.get.return_value = GRANT_DETAIL
        self.memagg.audits.list.return_value = page([AUDIT_DETAIL])
        self.memagg.audits.get.return_value = AUDIT_DETAIL
        self.memagg.audits.execute.return_value = dict(AUDIT_DETAIL,
                                                       state='executing')

    def assert_client_made_from_catalog(self):
        session = self.client_class.call_args.args[0]
        self.assertEqual(ENDPOINT,
                         self.client_class.call_args.kwargs[
                             'endpoint_override'])
        self.assertEqual(self.token.id, session.auth.token)


class ProjectPanelTests(MemaggViewTests):

    def test_lists_own_instances_wss_without_hosts(self):
        resp = self.client.get(reverse('horizon:project:memory:index'))
        self.assertEqual(200, resp.status_code)
        self.assertTemplateUsed(resp, 'memagg_dashboard/project_index.html')
        self.assertContains(resp, 'vm-one')
        self.assertContains(resp, '<td class="memagg-wss">1152</td>',
                            html=True)
        self.assertNotContains(resp, 'compute-1')
        self.memagg.instances.list.assert_called_once_with(marker=None)
        self.memagg.host_usages.page.assert_not_called()
        self.assertNotContains(resp, 'memagg-next')
        self.assert_client_made_from_catalog()

    @mock.patch('django.utils.timezone.now', lambda: datetime.datetime(
        2026, 11, 26, 10, 30, tzinfo=datetime.timezone.utc))
    def test_instance_history_chart_carries_the_samples(self):
        resp = self.client.get(reverse('horizon:project:memory:instance',
                                       args=[VM]))
        self.assertEqual(200, resp.status_code)
        self.memagg.instances.wss.assert_called_once_with(
            VM, since=mock.ANY, sort_key='sampled_at', sort_dir='desc',
            limit=1000)
        self.assertEqual('2026-11-26T09:30:00+00:00', self.memagg.instances
                         .wss.call_args.kwargs['since'].isoformat())
        # A member may not list grants: no remote memory drawn.
        self.memagg.grants.list.assert_not_called()
        body = resp.content.decode()
        # Drawn oldest first, left to right.
        for key in ('wss_mb', 'target_mb'):
            marks = ['data-mb="%d" data-at="%s"'
                     % (sample[key], sample['sampled_at'])
                     for sample in SAMPLES]
            positions = [body.index(mark) for mark in marks]
            self.assertEqual(sorted(positions), positions)
        series = resp.context['chart']['series']
        xs = [dot['x'] for dot in series[2]['dots']]
        self.assertEqual(sorted(set(xs)), xs)
        self.assertIn('data-series="booked_mb" data-latest-mb="4096"', body)
        self.assertContains(resp, '<dd id="memagg-estimator">badis</dd>',
                            html=True)
        self.assertContains(
            resp, '<dd id="memagg-local-policy">cmms/equal</dd>', html=True)

    def test_instance_history_range_is_chosen(self):
        resp = self.client.get(reverse('horizon:project:memory:instance',
                                       args=[VM]), {'range': '7d'})
        since = self.memagg.instances.wss.call_args.kwargs['since']
        self.assertAlmostEqual((timezone.now() - since).total_seconds(),
                               7 * 86400, delta=60)
        self.assertContains(resp, 'class="btn btn-default btn-sm active" '
                                  'data-range="7d"')

    def test_unknown_range_is_an_error_not_a_crash(self):
        resp = self.client.get(reverse('horizon:project:memory:instance',
                                       args=[VM]), {'range': '2y'})
        self.assertEqual(200, resp.status_code)
        self.assertMessageCount(resp, error=1)
        self.assertContains(resp, 'data-range="1h"')

    def test_admin_panel_is_not_for_members(self):
        resp = self.client.get(reverse('horizon:admin:memory:index'))
        self.assertNotEqual(200, resp.status_code)
        self.memagg.host_usages.page.assert_not_called()

    def test_pages_follow_the_api_markers(self):
        self.memagg.instances.list.return_value = page([INSTANCE],
                                                       next_marker=VM)
        resp = self.client.get(reverse('horizon:project:memory:index'),
                               {'marker': 'previous-last'})
        self.memagg.instances.list.assert_called_once_with(
            marker='previous-last')
        self.assertContains(resp, 'href="?marker=%s"' % VM)

    def test_api_error_is_shown_not_raised(self):
        self.memagg.instances.list.side_effect = client_exc.Forbidden(
            'denied')
        resp = self.client.get(reverse('horizon:project:memory:index'))
        self.assertEqual(200, resp.status_code)
        self.assertMessageCount(resp, error=1)


class AdminViewTests(MemaggViewTests):
    """An administrator's session."""

    def setActiveUser(self, *args, **kwargs):
        kwargs['roles'] = kwargs.get('roles', []) + [
            self.roles.admin._info]
        super().setActiveUser(*args, **kwargs)


class AdminPanelTests(AdminViewTests):

    def test_host_table_bars_and_summary(self):
        resp = self.client.get(reverse('horizon:admin:memory:index'))
        self.assertEqual(200, resp.status_code)
        body = resp.content.decode()
        self.memagg.host_usages.page.assert_called_once_with(
            limit=20, marker=None, sort_key='host', sort_dir='asc')
        self.assertLess(body.index('data-host="compute-1"'),
                        body.index('data-host="compute-2"'))
        for series, mb in (('memory_mb', 65536), ('booked_mb', 12288),
                           ('wss_maxavg_mb', 4000), ('lent_mb', 0),
                           ('borrowed_mb', 256),
                           ('free_reservoir_mb', 8192)):
            self.assertIn('data-series="%s" data-mb="%d"' % (series, mb),
                          body)
        self.assertIn('data-series="lent_mb" data-mb="256"', body)
        self.assertContains(
            resp, '<dd data-mb="13480" id="memagg-freed">13480 MiB</dd>',
            html=True)
        self.assertContains(
            resp, '<dd id="memagg-emptiable" data-hosts="1">1</dd>',
            html=True)
        # Only now is shown: the shortest range is summed.
        kwargs = self.memagg.cloud_usage.get.call_args.kwargs
        self.assertEqual(1, (kwargs['until'] - kwargs['since']).seconds)
        # Every figure's header sorts on the server, the bar's does not.
        self.assertContains(resp, 'data-sort="booked_mb" '
                                  'href="?sort=booked_mb&amp;dir=asc"')
        self.assertNotContains(resp, 'data-sort="bar"')
        self.assertNotContains(resp, 'Next&nbsp;')

    def test_host_table_sorts_and_pages_on_the_server(self):
        self.memagg.host_usages.page.return_value = page(
            HOST_USAGES, next_marker='compute-2')
        resp = self.client.get(reverse('horizon:admin:memory:index'),
                               {'sort': 'booked_mb', 'dir': 'desc',
                                'marker': 'compute-0'})
        self.memagg.host_usages.page.assert_called_once_with(
            limit=20, marker='compute-0', sort_key='booked_mb',
            sort_dir='desc')
        # Next and Prev keep the sort; the sorted column's header turns
        # it round.
        self.assertContains(
            resp, 'href="?marker=compute-2&amp;sort=booked_mb&amp;dir=desc"')
        self.assertContains(
            resp, 'href="?prev_marker=compute-1&amp;sort=booked_mb&amp;'
                  'dir=desc"')
        self.assertContains(resp, 'href="?sort=booked_mb&amp;dir=asc"')

    def test_host_table_previous_page_reads_backwards(self):
        self.memagg.host_usages.page.return_value = page(
            HOST_USAGES[::-1], next_marker=None)
        resp = self.client.get(reverse('horizon:admin:memory:index'),
                               {'prev_marker': 'compute-3'})
        self.memagg.host_usages.page.assert_called_once_with(
            limit=20, marker='compute-3', sort_key='host', sort_dir='desc')
        body = resp.content.decode()
        self.assertLess(body.index('data-host="compute-1"'),
                        body.index('data-host="compute-2"'))
        self.assertNotIn('prev_marker=compute-1', body)
        self.assertIn('?marker=compute-2', body)

    def test_host_table_filter_is_the_apis(self):
        url = reverse('horizon:admin:memory:index')
        self.client.post(url, {'hosts__filter__q': 'rack-1',
                               'hosts__filter__q_field':
                                   'host_contains'})
        self.client.get(url)
        self.memagg.host_usages.page.assert_called_with(
            limit=20, marker=None, sort_key='host', sort_dir='asc',
            host_contains='rack-1')

    def test_bad_sort_is_an_error_and_the_default_order(self):
        resp = self.client.get(reverse('horizon:admin:memory:index'),
                               {'sort': 'secret', 'dir': 'up'})
        self.assertEqual(200, resp.status_code)
        self.assertMessageCount(resp, error=1)
        self.memagg.host_usages.page.assert_called_once_with(
            limit=20, marker=None, sort_key='host', sort_dir='asc')

    def test_api_error_shows_the_page_without_hosts(self):
        self.memagg.host_usages.page.side_effect = client_exc.Forbidden(
            'denied')
        resp = self.client.get(reverse('horizon:admin:memory:index'))
        self.assertEqual(200, resp.status_code)
        self.assertMessageCount(resp, error=1)

    def test_cloud_over_the_range_chosen(self):
        resp = self.client.get(reverse('horizon:admin:memory:cloud'),
                               {'range': '6h'})
        self.assertEqual(200, resp.status_code)
        kwargs = self.memagg.cloud_usage.get.call_args.kwargs
        self.assertEqual(6 * 3600, (kwargs['until'] -
                                    kwargs['since']).total_seconds())
        body = resp.content.decode()
        self.assertIn('id="memagg-cloud-memory"', body)
        self.assertIn('data-series="freed_mb" data-latest-mb="13480"', body)
        self.assertIn('data-series="emptiable_hosts" data-latest-mb="1"',
                      body)
        self.assertIn('class="memagg-x-tick"', body)

    def test_admin_instances_with_hosts(self):
        resp = self.client.get(reverse('horizon:admin:memory:instances'))
        self.assertContains(resp, 'vm-one')
        self.assertContains(resp, 'compute-1')

    def test_admin_instance_chart_draws_remote_memory(self):
        self.memagg.grants.list.return_value = page([GRANT_DETAIL])
        resp = self.client.get(reverse('horizon:admin:memory:instance',
                                       args=[VM]))
        self.memagg.grants.list.assert_called_once_with(instance_uuid=VM)
        self.assertContains(resp, 'data-series="remote_mb" '
                                  'data-latest-mb="256"')

    def test_reservoir_shows_donors_slabs_and_partial_reason(self):
        resp = self.client.get(reverse('horizon:admin:memory:reservoir'))
        self.assertEqual(200, resp.status_code)
        self.memagg.grants.get.assert_called_once_with(GRANT)
        self.assertContains(
            resp, '<td class="memagg-donors">compute-2</td>', html=True)
        self.assertContains(resp, 'donors had 256 MiB free')
        self.assertContains(resp, '#1 compute-2 128 MiB (active)')
        # The instance by name, its host's instances listed once.
        self.memagg.instances.list.assert_called_once_with(host='compute-1')
        self.assertContains(resp, 'title="%s">vm-one</a>' % VM)

    def test_audit_actions_in_order_with_execute(self):
        resp = self.client.get(reverse('horizon:admin:memory:audit',
                                       args=[AUDIT]))
        self.assertEqual(200, resp.status_code)
        body = resp.content.decode()
        self.assertLess(body.index('data-sequence="1"'),
                        body.index('data-sequence="2"'))
        self.assertContains(resp, 'id="memagg-execute"')
        self.memagg.instances.list.assert_called_once_with(host='compute-2')
        self.assertContains(resp, 'title="%s">vm-one</a>' % VM)
        # The plan is the table only: Horizon's page header renders a
        # context variable named "actions" as its buttons.
        self.assertNotIn('action_type', body)

    def test_no_execute_once_the_audit_left_recommended(self):
        self.memagg.audits.get.return_value = dict(AUDIT_DETAIL,
                                                   state='succeeded')
        resp = self.client.get(reverse('horizon:admin:memory:audit',
                                       args=[AUDIT]))
        self.assertNotContains(resp, 'id="memagg-execute"')

    def test_execute_calls_the_api(self):
        resp = self.client.post(reverse('horizon:admin:memory:execute',
                                        args=[AUDIT]))
        self.assertRedirectsNoFollow(
            resp, reverse('horizon:admin:memory:audit', args=[AUDIT]))
        self.memagg.audits.execute.assert_called_once_with(AUDIT)

    def test_audits_listed_newest_first(self):
        resp = self.client.get(reverse('horizon:admin:memory:audits'))
        self.assertContains(resp, 'compute-2 underloaded')
        self.memagg.audits.list.assert_called_once_with(
            marker=None, sort_key='created_at', sort_dir='desc')
        self.assertContains(resp, 'id="memagg-create-audit"')

    def test_create_audit_calls_the_api(self):
        self.memagg.audits.create.return_value = dict(AUDIT_DETAIL,
                                                      state='pending')
        resp = self.client.post(reverse('horizon:admin:memory:create_audit'),
                                {'memory_basis': 'booked'})
        self.assertRedirectsNoFollow(
            resp, reverse('horizon:admin:memory:audit', args=[AUDIT]))
        self.memagg.audits.create.assert_called_once_with(
            memory_basis='booked', auto_execute=False)

    def test_create_audit_with_a_bad_basis_is_an_error(self):
        resp = self.client.post(reverse('horizon:admin:memory:create_audit'),
                                {'memory_basis': 'vibes'})
        self.assertRedirectsNoFollow(
            resp, reverse('horizon:admin:memory:audits'))
        self.memagg.audits.create.assert_not_called()


class PolicyOverrideTests(AdminViewTests):
    """An operator's policy file that keeps Execute and audit creation
    from administrators too: the buttons go and a posted form is
    refused."""

    def setUp(self):
        super().setUp()
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        directory = pathlib.Path(tmp.name)
        (directory / 'memagg_policy.yaml').write_text(
            '"memagg:audit:execute": "!"\n"memagg:audit:create": "!"\n')
        patcher = mock.patch.object(auth_policy, '_BASE_PATH',
                                    str(directory))
        patcher.start()
        self.addCleanup(patcher.stop)
        # openstack_auth keeps the enforcers it made, and their rules, for
        # the process: these tests' are made from the file above, and
        # dropped after them (the others share the defaults' ones, whose
        # many YAML files take a second to load).
        auth_policy.reset()
        self.addCleanup(auth_policy.reset)

    def test_no_execute_button(self):
        resp = self.client.get(reverse('horizon:admin:memory:audit',
                                       args=[AUDIT]))
        self.assertEqual(200, resp.status_code)
        self.assertContains(resp, 'underload')
        self.assertNotContains(resp, 'id="memagg-execute"')

    def test_posted_execute_is_refused(self):
        resp = self.client.post(reverse('horizon:admin:memory:execute',
                                        args=[AUDIT]))
        self.assertEqual(403, resp.status_code)
        self.memagg.audits.execute.assert_not_called()

    def test_no_create_audit_form(self):
        resp = self.client.get(reverse('horizon:admin:memory:audits'))
        self.assertEqual(200, resp.status_code)
        self.assertNotContains(resp, 'id="memagg-create-audit"')

    def test_posted_create_audit_is_refused(self):
        resp = self.client.post(reverse('horizon:admin:memory:create_audit'),
                                {'memory_basis': 'wss'})
        self.assertEqual(403, resp.status_code)
        self.memagg.audits.create.assert_not_called()


def test_view_tests_leave_client_exceptions_as_they_were():
    suite = unittest.TestSuite([ProjectPanelTests(
        'test_lists_own_instances_wss_without_hosts')])
    result = unittest.TestResult()
    suite.run(result)
    assert result.wasSuccessful(), result.errors + result.failures
    assert str(ks_exc.ConnectFailure('refused')) == 'refused'
    assert str(sdk_exc.SDKException('no such server')) == 'no such server'
