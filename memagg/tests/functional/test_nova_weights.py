"""QoS weights read from Nova and Glance by the nova compute API driver.

Nova cannot run here, so the test serves a Nova and Glance double over real
HTTP on loopback. The double is checked against Nova's own contract: every
GET /servers/{id} body it sends is first validated against the response
schema that the installed ``nova`` package declares for the requested
microversion (nova/api/openstack/compute/schemas/servers.py, show_response*),
so a body real Nova could not send fails the test. Glance has no installed
schema here; its bodies follow the Image API v2 reference by hand.

openstacksdk authenticates against the real Keystone of the ``keystone``
fixture with the [nova] keystoneauth options and finds Nova and Glance
through Keystone's catalog, where the test registers the double's URLs;
the double accepts only tokens Keystone confirms.
"""
import datetime
import http.server
import json
import re
import subprocess
import sys
import threading
import uuid

import jsonschema
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
import pytest
import requests

from memagg.compute import memory
from memagg.compute import qos
from memagg.conf import compute as compute_conf
from memagg.conf import local_policy as local_policy_conf
from memagg.conf import nova as nova_conf
from memagg.conf import wss as wss_conf
from memagg.drivers.compute_api import base
from memagg.drivers.compute_api import nova as nova_driver
from memagg.drivers.hypervisor import base as hypervisor
from memagg.tests.functional import keystone as keystone_fixture

pytestmark = [pytest.mark.functional, pytest.mark.slow]

keystone = keystone_fixture.keystone

GOLD_VM = str(uuid.uuid4())      # flavor gold, image bronze: flavor wins
IMAGE_VM = str(uuid.uuid4())     # flavor without weight, image bronze
PLAIN_VM = str(uuid.uuid4())     # neither names a weight
VOLUME_VM = str(uuid.uuid4())    # booted from a volume, flavor "2.5"
ORPHAN_VM = str(uuid.uuid4())    # its image was deleted from Glance
BRONZE_IMAGE = str(uuid.uuid4())
PLAIN_IMAGE = str(uuid.uuid4())
DELETED_IMAGE = str(uuid.uuid4())

# Importing nova registers nova's options in the global CONF, where some
# clash with memagg's; a child interpreter reads the schemas instead.
_DUMP_SCHEMAS = """
import json, re, sys
from nova.api.openstack import api_version_request
from nova.api.openstack.compute.schemas import servers
json.dump({'max': api_version_request.max_api_version().get_string(),
           'show': {name: getattr(servers, name) for name in dir(servers)
                    if re.fullmatch(r'show_response(_v2\\d+)?', name)}},
          sys.stdout)
"""


def _nova_contract():
    """(Nova's newest microversion, [((2, minor), show_response schema)]
    ascending), from the installed nova package."""
    pytest.importorskip('nova', reason='the nova package provides Nova\'s '
                                       'response schemas')
    out = subprocess.run([sys.executable, '-c', _DUMP_SCHEMAS],
                         capture_output=True, text=True, timeout=120,
                         check=True, stdin=subprocess.DEVNULL).stdout
    contract = json.loads(out)
    schemas = []
    for name, schema in contract['show'].items():
        minor = re.fullmatch(r'show_response(?:_v2(\d+))?', name).group(1)
        schemas.append(((2, int(minor or 1)), schema))
    return contract['max'], sorted(schemas)


@pytest.fixture(scope='module')
def contract():
    return _nova_contract()


def _version(text):
    major, minor = text.split('.')
    return int(major), int(minor)


class Cloud:
    """The double's data: flavors (by server) and images."""

    def __init__(self, project_id, user_id):
        self.project_id = project_id
        self.user_id = user_id
        flavor = {'memagg:weight': 'gold', 'hw:mem_page_size': 'small'}
        self.servers = {
            GOLD_VM: (flavor, BRONZE_IMAGE),
            IMAGE_VM: ({'hw:cpu_policy': 'shared'}, BRONZE_IMAGE),
            PLAIN_VM: ({}, PLAIN_IMAGE),
            VOLUME_VM: ({'memagg:weight': '2.5'}, ''),
            ORPHAN_VM: ({}, DELETED_IMAGE),
        }
        self.images = {
            BRONZE_IMAGE: {'memagg:weight': 'bronze', 'os_distro': 'debian'},
            PLAIN_IMAGE: {'os_distro': 'debian'},
        }


class NovaDouble:
    """Nova's /servers/{id} and Glance's /v2/images/{id} on loopback."""

    def __init__(self, keystone, cloud, contract):
        self.keystone = keystone
        self.cloud = cloud
        self.nova_max, self.schemas = contract
        self.max_version = self.nova_max
        self.requests = []
        self.served_versions = set()
        self.valid_tokens = set()
        self.failing = False
        self._admin_token = keystone.token(keystone.admin)
        self.server = http.server.ThreadingHTTPServer(
            ('127.0.0.1', 0), self._handler())
        self.url = 'http://127.0.0.1:%d' % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)
        self.thread.start()

    @property
    def compute_url(self):
        return self.url + '/compute/v2.1'

    @property
    def image_url(self):
        return self.url + '/image'

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)

    def token_valid(self, token):
        """Whether Keystone confirms ``token`` (as keystonemiddleware
        would ask it)."""
        if token in self.valid_tokens:
            return True
        resp = requests.get(
            self.keystone.auth_url + '/auth/tokens', timeout=30,
            headers={'X-Auth-Token': self._admin_token,
                     'X-Subject-Token': token or ''})
        if resp.status_code == 200:
            self.valid_tokens.add(token)
            return True
        return False

    def _handler(self):
        double = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                status, body, headers = double.answer(
                    self.path, self.headers)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def answer(self, path, headers):
        """(status, JSON body, extra headers) of a GET of ``path``."""
        path = path.split('?')[0].rstrip('/')
        self.requests.append(path)
        if path in ('/compute', '/compute/v2.1'):
            version = self._nova_version_doc()
            if path == '/compute':
                return 200, {'versions': [version]}, {}
            return 200, {'version': version}, {}
        if path == '/image':
            return 200, {'versions': [{
                'id': 'v2.16', 'status': 'CURRENT',
                'links': [{'rel': 'self', 'href': self.image_url + '/v2/'}],
            }]}, {}
        if not self.token_valid(headers.get('X-Auth-Token')):
            return 401, {'error': {'code': 401,
                                   'message': 'token not valid'}}, {}
        if self.failing:
            return 503, {'computeFault': {'code': 503,
                                          'message': 'down'}}, {}
        match = re.fullmatch(r'/compute/v2\.1/servers/([0-9a-f-]+)', path)
        if match:
            return self._server(match.group(1), headers)
        match = re.fullmatch(r'/image/v2/images/([0-9a-f-]+)', path)
        if match:
            return self._image(match.group(1))
        return 404, {'itemNotFound': {'code': 404,
                                      'message': 'no route %s' % path}}, {}

    def _nova_version_doc(self):
        return {'id': 'v2.1', 'status': 'CURRENT',
                'version': self.max_version, 'min_version': '2.1',
                'updated': '2013-07-23T11:33:21Z',
                'links': [{'rel': 'self',
                           'href': self.compute_url + '/'}],
                'media-types': [{
                    'base': 'application/json',
                    'type': 'application/vnd.openstack.compute+json;'
                            'version=2.1'}]}

    def _server(self, server_id, headers):
        requested = headers.get('OpenStack-API-Version', '')
        text = requested.replace('compute', '').strip() or '2.1'
        version = min(_version(text), _version(self.max_version))
        answered = {'OpenStack-API-Version': 'compute %d.%d' % version,
                    'Vary': 'OpenStack-API-Version'}
        if server_id not in self.cloud.servers:
            return 404, {'itemNotFound': {
                'code': 404,
                'message': 'Instance %s could not be found.' % server_id,
            }}, answered
        body = {'server': self._server_body(server_id, version)}
        self.served_versions.add(version)
        # The double's contract check: what real Nova may answer.
        jsonschema.Draft202012Validator(
            self.schema_for(version),
            format_checker=jsonschema.FormatChecker()).validate(body)
        return 200, body, answered

    def schema_for(self, version):
        """Nova's show_response schema in force at ``version``."""
        return [schema for since, schema in self.schemas
                if since <= version][-1]

    def _server_body(self, server_id, version):
        extra_specs, image_id = self.cloud.servers[server_id]
        now = datetime.datetime(2024, 5, 1, 12, 0, 0).strftime(
            '%Y-%m-%dT%H:%M:%SZ')
        link = [{'rel': 'self',
                 'href': '%s/servers/%s' % (self.compute_url, server_id)}]
        server = {
            'accessIPv4': '', 'accessIPv6': '', 'addresses': {},
            'config_drive': '', 'created': now,
            'flavor': {'id': '42', 'links': [{
                'rel': 'bookmark', 'href': self.url + '/flavors/42'}]},
            'hostId': 'a' * 56, 'id': server_id,
            'image': '' if not image_id else {
                'id': image_id, 'links': [{
                    'rel': 'bookmark',
                    'href': self.url + '/images/' + image_id}]},
            'key_name': None, 'links': link, 'metadata': {},
            'name': 'vm-' + server_id[:8],
            'os-extended-volumes:volumes_attached': [],
            'status': 'ACTIVE', 'tenant_id': self.cloud.project_id,
            'updated': now, 'user_id': self.cloud.user_id,
            'OS-DCF:diskConfig': 'MANUAL',
            'OS-EXT-AZ:availability_zone': 'nova',
            'OS-EXT-STS:power_state': 1, 'OS-EXT-STS:task_state': None,
            'OS-EXT-STS:vm_state': 'active',
            'OS-SRV-USG:launched_at': now, 'OS-SRV-USG:terminated_at': None,
        }
        additions = [
            ((2, 9), {'locked': False}),
            ((2, 19), {'description': None}),
            ((2, 26), {'tags': []}),
            ((2, 63), {'trusted_image_certificates': None}),
            ((2, 71), {'server_groups': []}),
            ((2, 73), {'locked_reason': None}),
            ((2, 90), {'OS-EXT-SRV-ATTR:hostname': 'vm'}),
            ((2, 96), {'pinned_availability_zone': None}),
            ((2, 100), {'scheduler_hints': {}}),
        ]
        for since, fields in additions:
            if version >= since:
                server.update(fields)
        if version >= (2, 47):
            server['flavor'] = {
                'disk': 1, 'ephemeral': 0, 'original_name': 'm1.small',
                'ram': 2048, 'swap': 0, 'vcpus': 1,
                'extra_specs': dict(extra_specs)}
        if version >= (2, 98) and image_id:
            server['image']['properties'] = dict(
                self.cloud.images.get(image_id, {}))
        return server

    def _image(self, image_id):
        if image_id not in self.cloud.images:
            return 404, {'code': 404, 'title': 'Not Found',
                         'message': 'No image found with ID %s'
                         % image_id}, {}
        body = {'id': image_id, 'name': 'debian', 'status': 'active',
                'visibility': 'public', 'protected': False,
                'container_format': 'bare', 'disk_format': 'qcow2',
                'min_disk': 0, 'min_ram': 0, 'size': 1024, 'tags': [],
                'owner': self.cloud.project_id,
                'created_at': '2024-05-01T12:00:00Z',
                'updated_at': '2024-05-01T12:00:00Z',
                'self': '/v2/images/' + image_id,
                'file': '/v2/images/%s/file' % image_id,
                'schema': '/v2/schemas/image'}
        # Glance returns custom properties as top-level keys.
        body.update(self.cloud.images[image_id])
        return 200, body, {}


@pytest.fixture(scope='module')
def double(keystone, contract):
    """The Nova and Glance double, registered in Keystone's catalog as the
    compute and image services of RegionOne, and removed at the end."""
    admin = keystone_fixture._Admin(keystone)
    cloud = Cloud(keystone.admin.project_id or admin.find(
        'project', keystone.admin.project_name),
        keystone.admin.user_id or admin.find('user',
                                             keystone.admin.username))
    nova = NovaDouble(keystone, cloud, contract)
    services = []
    for service_type, name, url in (('compute', 'nova', nova.compute_url),
                                    ('image', 'glance', nova.image_url)):
        service = admin._call('POST', '/services', json={'service': {
            'type': service_type, 'name': name}})['service']['id']
        services.append(service)
        for interface in ('public', 'internal'):
            admin._call('POST', '/endpoints', json={'endpoint': {
                'service_id': service, 'interface': interface, 'url': url,
                'region_id': keystone_fixture.REGION}})
    try:
        yield nova
    finally:
        for service in services:
            for endpoint in admin._call(
                    'GET', '/endpoints',
                    params={'service_id': service})['endpoints']:
                admin._call('DELETE', '/endpoints/' + endpoint['id'])
            admin._call('DELETE', '/services/' + service)
        nova.close()


@pytest.fixture
def nova_conf_opts(monkeypatch, keystone):
    """A ConfigOpts of memagg-compute with [nova] pointing at the real
    Keystone as its admin (Nova's default policy lets admins show any
    project's server). Private, with its own [nova] OptGroup, since loading
    the password plug-in registers required options there."""
    monkeypatch.setattr(nova_conf, 'GROUP', cfg.OptGroup('nova'))
    conf = cfg.ConfigOpts()
    for module in (compute_conf, nova_conf, wss_conf, local_policy_conf):
        module.register_opts(conf)
    conf([], project='memagg', default_config_files=[])
    conf.set_override('compute_api_driver', 'nova', group='compute')
    account = keystone.admin
    for name, value in (('auth_type', 'password'),
                        ('region_name', keystone_fixture.REGION),
                        ('timeout', 10)):
        conf.set_override(name, value, group='nova')
    # The plug-in's options exist once it is loaded; register them to set.
    conf.register_opts(
        ks_loading.get_auth_plugin_conf_options('password'), group='nova')
    for name, value in (('auth_url', keystone.auth_url),
                        ('username', account.username),
                        ('password', account.password),
                        ('project_name', account.project_name),
                        ('user_domain_id', 'default'),
                        ('project_domain_id', 'default')):
        conf.set_override(name, value, group='nova')
    return conf


@pytest.mark.parametrize('max_version', [None, '2.60'])
def test_weights_follow_flavor_then_image_then_default(
        double, nova_conf_opts, max_version):
    double.max_version = max_version or double.nova_max
    driver = base.load(nova_conf_opts)
    assert isinstance(driver, nova_driver.NovaComputeApi)
    double.requests.clear()
    double.served_versions.clear()

    assert driver.get_qos_weight(GOLD_VM) == base.QosWeight(
        'gold', base.FLAVOR)
    # The flavor answered: Glance was not asked.
    assert not [p for p in double.requests if p.startswith('/image/v2')]
    assert driver.get_qos_weight(IMAGE_VM) == base.QosWeight(
        'bronze', base.IMAGE)
    assert '/image/v2/images/' + BRONZE_IMAGE in double.requests
    assert driver.get_qos_weight(PLAIN_VM) == base.NO_WEIGHT
    assert driver.get_qos_weight(VOLUME_VM) == base.QosWeight(
        '2.5', base.FLAVOR)
    assert driver.get_qos_weight(ORPHAN_VM) == base.NO_WEIGHT
    with pytest.raises(base.InstanceNotFound):
        driver.get_qos_weight(str(uuid.uuid4()))
    # openstacksdk negotiated a microversion with embedded flavors, and
    # every body was checked against Nova's schema for it.
    assert len(double.served_versions) == 1
    assert (2, 47) <= double.served_versions.pop() <= _version(
        double.max_version)


def test_nova_older_than_2_47_is_reported(double, nova_conf_opts):
    double.max_version = '2.46'
    driver = base.load(nova_conf_opts)
    with pytest.raises(base.ComputeApiUnavailable) as err:
        driver.get_qos_weight(GOLD_VM)
    assert '2.47' in str(err.value)


def test_a_token_keystone_did_not_issue_is_refused(double):
    resp = requests.get(double.compute_url + '/servers/' + GOLD_VM,
                        headers={'X-Auth-Token': 'forged'}, timeout=30)
    assert resp.status_code == 401


class Host(hypervisor.HypervisorDriver):
    """Guests of 2048 MiB ballooned to 1536 MiB and using all of it, on a
    host with 2560 MiB for guests: 512 MiB must be reclaimed."""

    def __init__(self, uuids):
        kib = 1536 * 1024
        self.domains = [hypervisor.DomainInfo(
            uuid=u, name=u, max_memory_mb=2048, current_memory_mb=1536,
            vcpus=1, cpu_time_ns=0, balloon=True, stats_period=5,
            memory_stats=dict(actual=kib, available=kib, usable=0))
            for u in uuids]
        self.balloons = {}

    def get_host_info(self):
        return hypervisor.HostInfo('node', 2560, 2560, 2)

    def list_domains(self):
        return list(self.domains)

    def set_balloon(self, uuid, target_mb):
        self.balloons[uuid] = target_mb


def test_weighted_policy_reclaims_from_the_bronze_vm(double, nova_conf_opts):
    """Nova's weights reach memagg-compute's weighted policy: the gold VM
    (flavor) keeps more than the bronze one (image) under shortage; and
    when Nova fails, the period still runs on the weights last read."""
    double.max_version = double.nova_max
    nova_conf_opts.set_override('estimator', 'stats', group='wss')
    nova_conf_opts.set_override('policy', 'weighted', group='local_policy')
    nova_conf_opts.set_override('reserved_host_memory_mb', 0,
                                group='compute')
    host = Host([GOLD_VM, IMAGE_VM])
    manager = memory.MemoryManager(host, nova_conf_opts)
    now = datetime.datetime(2024, 5, 1, tzinfo=datetime.timezone.utc)
    result = manager.run_period(host.get_host_info(), host.list_domains(),
                                now)
    gold = result.vms[GOLD_VM].target_mb
    bronze = result.vms[IMAGE_VM].target_mb
    # Weights 4 and 1: all 512 MiB come from the bronze VM.
    assert (gold, bronze) == (1536, 1024)

    # A node that starts while Nova fails: default weights, equal shares
    # (to within one reclaim chunk of 50 MiB).
    double.failing = True
    try:
        manager.qos = qos.WeightResolver(nova_conf_opts)
        again = manager.run_period(host.get_host_info(),
                                   host.list_domains(), now)
    finally:
        double.failing = False
    gold, bronze = (again.vms[GOLD_VM].target_mb,
                    again.vms[IMAGE_VM].target_mb)
    assert gold + bronze == 2560 and abs(gold - bronze) <= 50, (gold, bronze)
