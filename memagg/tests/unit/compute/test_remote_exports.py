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

"""The exports of memagg-compute's remote memory
(memagg/compute/remote_exports.py), the endpoints memagg-scheduler calls:
slabs prepared, freed and reclaimed for donors, grants attached to their
VMs or adopted after a live migration, page keys wrapped and installed,
exports dropped. The fakes are in remote_fixtures.py.
"""
import os

import pytest

from memagg.common import exceptions
from memagg.compute import remote_grants
from memagg.compute import swapd
from memagg.drivers.hypervisor import base
from memagg.tests.unit.compute.remote_fixtures import (GRANT, GRANT2,
                                                       grant_dict, MIB, OFFER,
                                                       SECRET, VM)


def test_an_adopted_grant_is_served_from_its_donors_without_hot_plug(lmc):
    local = remote_grants.local_copy_path(lmc.conf.swapd.state_dir, VM, GRANT)
    os.makedirs(os.path.dirname(local))
    with open(local, 'w') as stale:
        stale.write('an earlier attempt')

    reply = lmc.adopt_grant(grant_dict())

    assert reply == {'socket': '/run/exports/%s.sock' % GRANT,
                     'name': 'memagg-swap-' + GRANT}
    create = [c for c in lmc.client.calls if c[0] == 'export_create']
    assert [c[-1] for c in create] == ['adopt']
    assert [s['index'] for s in create[0][6]] == [0, 1]
    assert not os.path.exists(local), 'a stale copy must not be reused'
    assert lmc.driver.attached == []
    assert lmc.grants_by_instance()[VM].uuid == GRANT
    # Idempotent: asked again (a resumed migration), nothing is created.
    lmc.adopt_grant(grant_dict())
    assert len([c for c in lmc.client.calls
                if c[0] == 'export_create']) == 1
    assert lmc.grant_status(GRANT) == {'stored_mb': 10,
                                       'local_copy_left_mb': 2,
                                       'sealed': False}
    # The copy's rebuild waits for the migration's end.
    assert [c for c in lmc.client.calls if c[0] == 'export_rebuild'] == []
    assert lmc.rebuild_grant(GRANT) == {'local_copy_left_mb': 2}
    assert ('export_rebuild', GRANT) in lmc.client.calls


def test_attach_seals_the_pages_unless_encrypt_pages_is_off(conf, lmc):
    lmc.attach_grant(grant_dict())
    conf.config(encrypt_pages=False, group='swapd')
    lmc.attach_grant(grant_dict(uuid=GRANT2))
    create = [c for c in lmc.client.calls if c[0] == 'export_create']
    assert [c[1] for c in create] == [GRANT, GRANT2]
    assert create[0][-1] == 'seal' and 'seal' not in create[1]
    assert lmc.grant_status(GRANT)['sealed'] is True
    assert lmc.grant_status(GRANT2)['sealed'] is False


def test_a_sealed_grant_is_adopted_with_a_key_offer_and_gets_its_key(lmc):
    reply = lmc.adopt_grant(grant_dict(sealed=True))
    assert reply['key_offer'] == OFFER
    create = [c for c in lmc.client.calls if c[0] == 'export_create']
    assert create[0][-2:] == ('adopt', 'seal')
    # The offer went to a call that failed: adopted again, the export
    # still waiting for its key is made anew with a new offer.
    assert lmc.adopt_grant(grant_dict(sealed=True))['key_offer'] == OFFER
    assert ('export_drop', GRANT, True) in lmc.client.calls
    assert len([c for c in lmc.client.calls
                if c[0] == 'export_create']) == 2
    assert lmc.install_page_key(GRANT, 'ab' * 93) == {}
    # Once it has its key, asking again changes nothing.
    lmc.adopt_grant(grant_dict(sealed=True))
    assert len([c for c in lmc.client.calls
                if c[0] == 'export_create']) == 2


@pytest.mark.parametrize('field,call', [
    ('grant.sealed', lambda lmc: lmc.adopt_grant(grant_dict(sealed='yes'))),
    ('offer', lambda lmc: lmc.wrap_page_key(GRANT, 'zz' * 32)),
    ('offer', lambda lmc: lmc.wrap_page_key(GRANT, None)),
    ('wrapped', lambda lmc: lmc.install_page_key(GRANT, 'ab' * 92)),
    ('grant_uuid', lambda lmc: lmc.wrap_page_key('nope', OFFER)),
])
def test_page_key_calls_name_the_bad_field(lmc, field, call):
    with pytest.raises(exceptions.InvalidParameter) as caught:
        call(lmc)
    assert caught.value.kwargs['field'] == field


def test_a_wrapped_key_that_does_not_open_is_a_bad_parameter(lmc):
    lmc.adopt_grant(grant_dict(sealed=True))
    lmc.client.errors['export_key_install'] = swapd.SwapdError(
        'EBADMSG', 'the wrapped key does not open')
    with pytest.raises(exceptions.InvalidParameter) as caught:
        lmc.install_page_key(GRANT, 'ab' * 93)
    assert caught.value.kwargs['field'] == 'wrapped'
    assert 'adopt the grant again' in caught.value.kwargs['reason']


def test_wrap_page_key_needs_the_export(lmc):
    with pytest.raises(exceptions.NotFound):
        lmc.wrap_page_key(GRANT, OFFER)
    lmc.attach_grant(grant_dict())
    assert lmc.wrap_page_key(GRANT, OFFER) == {'wrapped': 'ab' * 93}


def test_drop_export_forgets_the_grant_without_releasing_it(lmc):
    lmc.adopt_grant(grant_dict())
    assert lmc.drop_export(GRANT) == {'dropped': True}
    assert lmc.drop_export(GRANT) == {'dropped': False}
    assert lmc.scheduler_api.calls == []
    assert lmc.grants_by_instance() == {}
    with pytest.raises(exceptions.NotFound):
        lmc.grant_status(GRANT)
    with pytest.raises(exceptions.NotFound):
        lmc.rebuild_grant(GRANT)
    with pytest.raises(exceptions.InvalidParameter) as caught:
        lmc.drop_export('not-a-uuid')
    assert caught.value.kwargs['field'] == 'grant_uuid'


def test_prepare_slabs_asks_swapd_in_bytes_and_reports_partial(lmc):
    reply = lmc.prepare_slabs(GRANT, SECRET, 64, [0, 1, 2])
    assert lmc.client.calls[-1] == ('grant_alloc', GRANT, SECRET, 64 * MIB,
                                    [0, 1, 2])
    assert reply == {'endpoint': 'tcp://10.0.0.2:7450',
                     'slabs': [{'index': 0, 'remote_addr': 4096, 'rkey': 77},
                               {'index': 1, 'remote_addr': 8192,
                                'rkey': 77}]}


def test_prepare_slabs_out_of_memory_is_an_empty_list(lmc):
    lmc.client.errors['grant_alloc'] = swapd.SwapdError('ENOMEM',
                                                        'slabs: no capacity')
    assert lmc.prepare_slabs(GRANT, SECRET, 64, [0]) == {'endpoint': None,
                                                         'slabs': []}


@pytest.mark.parametrize('args, field', [
    ((GRANT, 'xyz', 64, [0]), 'secret'),
    ((GRANT, SECRET, 0, [0]), 'slab_size_mb'),
    ((GRANT, SECRET, 64, []), 'indexes'),
    ((GRANT, SECRET, 64, [-1]), 'indexes'),
    (('not-a-uuid', SECRET, 64, [0]), 'grant_uuid'),
])
def test_prepare_slabs_refuses_bad_arguments_naming_them(lmc, args, field):
    with pytest.raises(exceptions.InvalidParameter) as info:
        lmc.prepare_slabs(*args)
    assert "'%s'" % field in str(info.value)
    assert not lmc.client.calls


def test_prepare_slabs_without_swapd_is_service_unavailable(lmc):
    lmc.client.down = True
    with pytest.raises(exceptions.ServiceUnavailable) as info:
        lmc.prepare_slabs(GRANT, SECRET, 64, [0])
    assert 'node-a' in str(info.value)


def test_free_and_reclaim_slabs_of_unknown_grants_do_nothing(lmc):
    assert lmc.free_slabs(GRANT) == {'freed': 3}
    assert lmc.reclaim_slabs(GRANT, [1]) == {'reclaimed': 2}
    assert lmc.client.calls[-1] == ('export_reclaim', GRANT, [1])
    lmc.client.errors['grant_free'] = swapd.SwapdError('ENOENT', 'grant')
    lmc.client.errors['export_reclaim'] = swapd.SwapdError('ENOENT', 'grant')
    assert lmc.free_slabs(GRANT) == {'freed': 0}
    assert lmc.reclaim_slabs(GRANT) == {'reclaimed': 0}


def test_a_slab_only_its_donor_has_in_full_is_not_reclaimed(lmc):
    # memagg-swapd refuses (EBUSY): a stale slab, or one not rebuilt yet.
    lmc.client.errors['export_reclaim'] = swapd.SwapdError(
        'EBUSY', 'slabs: slab 1 is stale in the local copy')
    with pytest.raises(exceptions.Conflict) as info:
        lmc.reclaim_slabs(GRANT, [1])
    assert 'slab 1 is stale' in str(info.value)


def test_promote_slab_copies_it_once_to_its_donor(lmc):
    lmc.attach_grant(grant_dict())
    slab = {'index': 1, 'endpoint': 'tcp://h2:7450', 'remote_addr': 8192}

    assert lmc.promote_slab(GRANT, slab) == {'pages': 16384}
    assert lmc.client.calls[-1] == ('export_promote', GRANT, slab)
    # Asked again (a scheduler's recovery): the slab is there already.
    lmc.client.errors['export_promote'] = swapd.SwapdError(
        'EALREADY', 'slab: slab 1 is on donor tcp://h2:7450 already')
    lmc.client.exports[GRANT]['slabs'] = [
        {'index': 0, 'endpoint': 'tcp://h1:7450', 'remote_addr': 4096,
         'rkey': 0}, dict(slab, rkey=0)]
    assert lmc.promote_slab(GRANT, slab) == {'pages': 0}
    with pytest.raises(exceptions.Conflict, match='another donor'):
        lmc.promote_slab(GRANT, dict(slab, endpoint='tcp://h3:7450'))
    with pytest.raises(exceptions.InvalidParameter, match='slab'):
        lmc.promote_slab(GRANT, {'index': 1})
    del lmc.client.errors['export_promote']
    with pytest.raises(exceptions.NotFound):
        lmc.promote_slab(VM, slab)


def test_attach_grant_creates_the_export_and_hot_plugs_it(lmc, tmp_path):
    reply = lmc.attach_grant(grant_dict())
    local = str(tmp_path / 'state' / 'local' / VM / (GRANT + '.img'))
    create = [c for c in lmc.client.calls if c[0] == 'export_create'][0]
    assert create[1:6] == (GRANT, SECRET, 128 * MIB, 64 * MIB, local)
    assert [s['index'] for s in create[6]] == [0, 1]
    assert create[6][0] == {'index': 0, 'endpoint': 'tcp://h1:7450',
                            'remote_addr': 4096, 'rkey': 7}
    assert (tmp_path / 'state' / 'local' / VM).is_dir()
    assert lmc.driver.attached == [(VM, '/run/exports/%s.sock' % GRANT,
                                    'memagg-swap-' + GRANT,
                                    'memagg-swap-0b4f7e0c')]
    assert reply == {'socket': '/run/exports/%s.sock' % GRANT,
                     'serial': 'memagg-swap-0b4f7e0c', 'target_dev': 'vdb'}
    assert lmc.grants_by_instance()[VM].target_dev == 'vdb'


def _local_tier(index):
    return {'index': index, 'endpoint': None, 'remote_addr': None,
            'rkey': None, 'size_mb': 64, 'status': 'reclaimed',
            'donor_host': 'c'}


def test_attach_grant_serves_local_tier_slabs_from_the_local_copy(lmc):
    # Slab 2 in the local tier: the export covers it, unlisted (local).
    grant = grant_dict()
    grant['slabs'].append(_local_tier(2))
    lmc.attach_grant(grant)
    create = [c for c in lmc.client.calls if c[0] == 'export_create'][0]
    assert create[3] == 192 * MIB
    assert [s['index'] for s in create[6]] == [0, 1]
    assert lmc.grants_by_instance()[VM].remote_mb == 128

    # All of it in the local tier: an export with no donor.
    lmc.drop_export(GRANT)
    lmc.attach_grant(grant_dict(slabs=[_local_tier(0), _local_tier(1)]))
    create = [c for c in lmc.client.calls if c[0] == 'export_create'][-1]
    assert (create[3], create[6]) == (128 * MIB, [])


def test_a_grant_with_local_tier_slabs_is_not_adopted(lmc):
    grant = grant_dict()
    grant['slabs'].append(_local_tier(2))
    with pytest.raises(exceptions.InvalidParameter) as info:
        lmc.adopt_grant(grant)
    assert '1 of 3 are in the local tier' in str(info.value)
    assert not [c for c in lmc.client.calls if c[0] == 'export_create']


def test_attach_grant_asks_for_the_reconnect_delay(conf, lmc):
    assert conf.conf.swapd.reconnect_delay == 30    # the default
    conf.config(reconnect_delay=7, group='swapd')
    lmc.attach_grant(grant_dict())
    assert lmc.driver.reconnect_delays == [7]


def test_attach_grant_again_reuses_the_export(lmc, tmp_path):
    lmc.attach_grant(grant_dict())
    reply = lmc.attach_grant(grant_dict())
    assert len([c for c in lmc.client.calls if c[0] == 'export_create']) == 1
    assert reply['socket'] == str(tmp_path / 'exports' / (GRANT + '.sock'))


def test_attach_grant_drops_its_export_when_the_hot_plug_fails(lmc):
    lmc.driver.attach_error = base.Unsupported('no hot-plug here')
    with pytest.raises(base.Unsupported):
        lmc.attach_grant(grant_dict())
    assert ('export_drop', GRANT, True) in lmc.client.calls
    assert lmc.grants_by_instance() == {}


@pytest.mark.parametrize('changes, field', [
    ({'secret': 'short'}, 'grant.secret'),
    ({'instance_uuid': 'x'}, 'grant.instance_uuid'),
    ({'slabs': []}, 'grant.slabs'),
    ({'slabs': [{'index': 0}]}, 'grant.slabs[0]'),
])
def test_attach_grant_refuses_a_bad_grant_naming_the_field(lmc, changes,
                                                           field):
    with pytest.raises(exceptions.InvalidParameter) as info:
        lmc.attach_grant(grant_dict(**changes))
    assert "'%s'" % field in str(info.value)
