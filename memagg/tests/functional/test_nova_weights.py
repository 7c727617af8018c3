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

"""QoS weights read from Nova and Glance by the nova compute API driver.

Nova cannot run here, so the test serves a Nova and Glance double over real
HTTP on loopback (memagg.tests.functional.nova_double). The double is
checked against Nova's own contract (memagg.tests.functional.nova_contract):
every GET /servers/{id} body it sends is first validated against the
response schema that the installed ``nova`` package declares for the
requested microversion (nova/api/openstack/compute/schemas/servers.py,
show_response*, as ServersController.show applies them), so a body real
Nova could not send fails the test. Glance has no installed schema here;
its bodies follow the Image API v2 reference by hand.

openstacksdk authenticates against the real Keystone of the ``keystone``
fixture with the [nova] keystoneauth options and finds Nova and Glance
through Keystone's catalog, where the test registers the double's URLs;
the double accepts only tokens Keystone confirms.
"""
import datetime
import re
import uuid

import pytest
import requests

from memagg.compute import memory
from memagg.compute import qos
from memagg.conf import host_reclaim as host_reclaim_conf
from memagg.conf import local_policy as local_policy_conf
from memagg.conf import wss as wss_conf
from memagg.drivers.compute_api import base
from memagg.drivers.compute_api import nova as nova_driver
from memagg.drivers.hypervisor import base as hypervisor
from memagg.tests.functional import nova_catalog
from memagg.tests.functional import nova_contract
from memagg.tests.functional import nova_double

pytestmark = [pytest.mark.functional, pytest.mark.slow]


GOLD_VM = str(uuid.uuid4())      # flavor gold, image bronze: flavor wins
IMAGE_VM = str(uuid.uuid4())     # flavor without weight, image bronze
PLAIN_VM = str(uuid.uuid4())     # neither names a weight
VOLUME_VM = str(uuid.uuid4())    # booted from a volume, flavor "2.5"
ORPHAN_VM = str(uuid.uuid4())    # its image was deleted from Glance
BRONZE_IMAGE = str(uuid.uuid4())
PLAIN_IMAGE = str(uuid.uuid4())
DELETED_IMAGE = str(uuid.uuid4())

IMAGES = {
    BRONZE_IMAGE: {'memagg:weight': 'bronze', 'os_distro': 'debian'},
    PLAIN_IMAGE: {'os_distro': 'debian'},
}
# Server -> (flavor extra specs, image).
SERVERS = {
    GOLD_VM: ({'memagg:weight': 'gold', 'hw:mem_page_size': 'small'},
              BRONZE_IMAGE),
    IMAGE_VM: ({'hw:cpu_policy': 'shared'}, BRONZE_IMAGE),
    PLAIN_VM: ({}, PLAIN_IMAGE),
    VOLUME_VM: ({'memagg:weight': '2.5'}, ''),
    ORPHAN_VM: ({}, DELETED_IMAGE),
}
IMAGE_PATH = '/image'


@pytest.fixture(scope='module')
def contract():
    return nova_contract.load_contract()


class NovaGlanceDouble(nova_double.NovaDouble):
    """The Nova double, plus Glance's /v2/images/{id}."""

    @property
    def image_url(self):
        return self.url + IMAGE_PATH

    def public(self, method, path):
        if method == 'GET' and path == IMAGE_PATH:
            return 200, {'versions': [{
                'id': 'v2.16', 'status': 'CURRENT',
                'links': [{'rel': 'self', 'href': self.image_url + '/v2/'}],
            }]}, {}
        return super().public(method, path)

    def other(self, method, path, query, headers, body):
        match = re.fullmatch(IMAGE_PATH + r'/v2/images/([0-9a-f-]+)', path)
        if method != 'GET' or not match:
            return super().other(method, path, query, headers, body)
        image_id = match.group(1)
        if image_id not in IMAGES:
            return 404, {'code': 404, 'title': 'Not Found',
                         'message': 'No image found with ID %s'
                         % image_id}, {}
        body = {'id': image_id, 'name': 'debian', 'status': 'active',
                'visibility': 'public', 'protected': False,
                'container_format': 'bare', 'disk_format': 'qcow2',
                'min_disk': 0, 'min_ram': 0, 'size': 1024, 'tags': [],
                'owner': self.project_id,
                'created_at': '2024-05-01T12:00:00Z',
                'updated_at': '2024-05-01T12:00:00Z',
                'self': '/v2/images/' + image_id,
                'file': '/v2/images/%s/file' % image_id,
                'schema': '/v2/schemas/image'}
        # Glance returns custom properties as top-level keys.
        body.update(IMAGES[image_id])
        return 200, body, {}


@pytest.fixture(scope='module')
def double(keystone, contract):
    """The Nova and Glance double, registered in Keystone's catalog as the
    compute and image services of RegionOne, and removed at the end."""
    project_id, user_id = nova_catalog.admin_ids(keystone)
    nova = NovaGlanceDouble(keystone, contract, project_id, user_id)
    for server_id, (extra_specs, image_id) in SERVERS.items():
        nova.add_server(server_id, 'node', extra_specs=extra_specs,
                        image_id=image_id,
                        image_properties=IMAGES.get(image_id, {}))
    try:
        with nova_catalog.in_catalog(keystone, [
                ('compute', 'nova', nova.compute_url),
                ('image', 'glance', nova.image_url)]):
            yield nova
    finally:
        nova.close()


@pytest.fixture
def nova_conf_opts(monkeypatch, keystone):
    """A ConfigOpts of memagg-compute with [nova] pointing at the real
    Keystone as its admin."""
    return nova_catalog.nova_conf(monkeypatch, keystone,
                                  (wss_conf, local_policy_conf,
                                   host_reclaim_conf))


@pytest.mark.parametrize('max_version', [None, '2.60'])
def test_weights_follow_flavor_then_image_then_default(
        double, nova_conf_opts, max_version):
    double.max_version = max_version or double.contract.max_version
    driver = base.load(nova_conf_opts)
    assert isinstance(driver, nova_driver.NovaComputeApi)
    double.requests.clear()
    double.served_versions.clear()

    assert driver.get_qos_weight(GOLD_VM) == base.QosWeight(
        'gold', base.FLAVOR)
    # The flavor answered: Glance was not asked.
    assert not [p for _, p in double.requests
                if p.startswith(IMAGE_PATH + '/v2')]
    assert driver.get_qos_weight(IMAGE_VM) == base.QosWeight(
        'bronze', base.IMAGE)
    assert ('GET', IMAGE_PATH + '/v2/images/' + BRONZE_IMAGE) \
        in double.requests
    assert driver.get_qos_weight(PLAIN_VM) == base.NO_WEIGHT
    assert driver.get_qos_weight(VOLUME_VM) == base.QosWeight(
        '2.5', base.FLAVOR)
    assert driver.get_qos_weight(ORPHAN_VM) == base.NO_WEIGHT
    with pytest.raises(base.InstanceNotFound):
        driver.get_qos_weight(str(uuid.uuid4()))
    # openstacksdk negotiated a microversion with embedded flavors, and
    # every body was checked against Nova's schema for it.
    assert len(double.served_versions) == 1
    assert (2, 47) <= double.served_versions.pop() <= nova_contract.version(
        double.max_version)
    assert double.violations == []


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
    double.max_version = double.contract.max_version
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
