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

"""memagg.db.grants' sums on SQLite, MariaDB and PostgreSQL (real servers):
the reservoir's summary and the memory granted to each consumer."""
import pytest

from memagg.db import grants as db_grants
from memagg.db.sqlalchemy import models
from memagg.tests.unit.db import rows

pytestmark = pytest.mark.functional


def test_reservoir_summary_counts_active_slabs_of_active_grants(
        admin_context, any_db):
    rows.insert(models.Host,
                dict(name='h1', free_reservoir_mb=1000, lendable_mb=800),
                dict(name='h2', free_reservoir_mb=500, lendable_mb=300),
                dict(name='h3'))
    g1, g2, g3 = rows.insert(
        models.Grant,
        dict(consumer_host='h3', granted_mb=512),
        dict(consumer_host='h3', granted_mb=256),
        dict(consumer_host='h1', granted_mb=1024, status='released'))
    rows.insert(models.Slab,
                dict(grant_id=g1, index=0, donor_host='h1', size_mb=256),
                dict(grant_id=g1, index=1, donor_host='h1', size_mb=256),
                dict(grant_id=g2, index=0, donor_host='h2', size_mb=256),
                # Reclaimed: the donor took it back, the grant lives on.
                dict(grant_id=g2, index=1, donor_host='h2', size_mb=256,
                     status='reclaimed'),
                dict(grant_id=g3, index=0, donor_host='h2', size_mb=1024))

    summary = db_grants.reservoir_summary(admin_context)

    # The reclaimed slab stays g2's in h3's local copy: its local tier.
    assert summary['hosts'] == [
        dict(host='h1', free_reservoir_mb=1000, lendable_mb=800, lent_mb=512,
             borrowed_mb=0, local_tier_mb=0),
        dict(host='h2', free_reservoir_mb=500, lendable_mb=300, lent_mb=256,
             borrowed_mb=0, local_tier_mb=0),
        dict(host='h3', free_reservoir_mb=0, lendable_mb=0, lent_mb=0,
             borrowed_mb=768, local_tier_mb=256)]
    assert {k: v for k, v in summary.items() if k != 'hosts'} == dict(
        free_reservoir_mb=1500, lendable_mb=1100, lent_mb=768,
        borrowed_mb=768, local_tier_mb=256)


def test_remote_memory_counts_active_grants_slabs_on_donors(db):
    g1, g2, g3 = rows.insert(
        models.Grant, dict(consumer_host='h1', granted_mb=256),
        dict(consumer_host='h1', granted_mb=768),
        dict(consumer_host='h1', granted_mb=1024, status='released'))
    rows.insert(models.Slab,
                dict(grant_id=g1, index=0, donor_host='h2', size_mb=256),
                dict(grant_id=g2, index=0, donor_host='h2', size_mb=256,
                     status='reclaiming'),
                dict(grant_id=g2, index=1, donor_host='h3', size_mb=256),
                # In h1's local tier (L2): not remote memory.
                dict(grant_id=g2, index=2, donor_host='h1', size_mb=256,
                     status='reclaimed'),
                dict(grant_id=g3, index=0, donor_host='h2', size_mb=1024))

    assert db_grants.remote_mb_by_consumer(db) == {'h1': 768}
