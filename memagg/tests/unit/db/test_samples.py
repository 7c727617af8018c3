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

"""memagg.db.samples on SQLite: the purge's arguments checked."""
import pytest

from memagg.common import exceptions
from memagg.db import samples as db_samples


def test_purge_rejects_negative_age(db):
    with pytest.raises(exceptions.InvalidParameter) as error:
        db_samples.purge_wss_samples(db, older_than_hours=-1)

    assert "'older_than_hours'" in str(error.value)
