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

"""GET /v1/reservoir: what the hosts lend and borrow, and (1.13) what
their grants keep in the local tier."""
from memagg.api import microversion
from memagg.conf import reservoir as reservoir_conf
from memagg.scheduler import reservoir
from memagg.tests.unit.api import data
from memagg.tests.unit.scheduler import compute_double


def test_reservoir(api):
    reservoir = api.get('/v1/reservoir').json['reservoir']
    assert reservoir['lendable_mb'] == 4096
    assert reservoir['lent_mb'] == 512 and reservoir['borrowed_mb'] == 512
    assert {h['host']: h['lent_mb'] for h in reservoir['hosts']} == {
        'host-1': 0, 'host-2': 512}


def test_local_tier_since_1_13(api, conf, admin_context):
    def get(version):
        return api.get('/v1/reservoir', headers={
            microversion.HEADER: 'memory-aggregation %s' % version}).json[
            'reservoir']

    assert 'local_tier_mb' not in get('1.12')
    assert 'local_tier_mb' not in get('1.12')['hosts'][0]
    assert get('1.13')['local_tier_mb'] == 0
    # Slab 1 demoted to host-1's local copy.
    if 'reservoir' not in conf.conf:
        reservoir_conf.register_opts(conf.conf)
    gmc = reservoir.Reservoir(conf.conf,
                              compute_api=compute_double.ComputeDouble())
    assert gmc.move_slabs(admin_context, data.GRANT, 'host-1',
                          demote=[1]) == {
        'demoted': [1], 'promoted': []}

    shown = get('1.13')
    assert shown['local_tier_mb'] == 256 and shown['borrowed_mb'] == 256
    assert {h['host']: h['local_tier_mb'] for h in shown['hosts']} == {
        'host-1': 256, 'host-2': 0}
