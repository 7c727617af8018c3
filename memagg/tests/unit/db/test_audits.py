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

"""memagg.db.audits on SQLite: the purge's arguments checked before it
deletes anything."""
import pytest

from memagg.common import exceptions
from memagg.db import audits as db_audits
from memagg.db import listings as db_listings
from memagg.db.sqlalchemy import models
from memagg.tests.unit.db import rows


def test_audit_purge_rejects_negative_age(db):
    rows.insert(models.Audit, dict(state='failed',
                                   updated_at=rows.ago(hours=1)))

    with pytest.raises(exceptions.InvalidParameter) as error:
        db_audits.purge_audits(db, older_than_hours=-1)

    assert "'older_than_hours'" in str(error.value)
    assert '-1 is negative' in str(error.value)
    assert len(db_listings.list_resources(db, 'audits')) == 1
