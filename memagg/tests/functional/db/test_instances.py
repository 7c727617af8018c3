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

"""memagg.db.instances on SQLite, MariaDB and PostgreSQL (real servers)."""
import pytest

from memagg.db import instances as db_instances
from memagg.db.sqlalchemy import models
from memagg.tests.unit.db import rows
from memagg.tests.unit.db.rows import VM_A, VM_B

pytestmark = pytest.mark.functional


def test_instances_on_hosts_leave_out_gone_ones(db):
    rows.insert(models.Instance,
                dict(uuid=VM_A, host='h1'),
                dict(uuid=VM_B, host='h1', status='gone'),
                dict(host='h2'))

    assert [i.uuid for i in db_instances.instances_on_hosts(db, ['h1'])] == [
        VM_A]
