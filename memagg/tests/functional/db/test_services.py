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

"""memagg.db.services on SQLite, MariaDB and PostgreSQL (real servers)."""
import threading

import pytest

from memagg.common import context as memagg_context
from memagg.db import listings as db_listings
from memagg.db import services as db_services

pytestmark = pytest.mark.functional


def test_concurrent_first_heartbeats_make_one_row(admin_context, any_db):
    barrier = threading.Barrier(4)
    errors = []

    def beat():
        context = memagg_context.get_admin_context()
        barrier.wait()
        try:
            db_services.service_heartbeat(context, 'node', 'memagg-compute',
                                          'memagg-compute.node')
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=beat) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert errors == []
    services = db_listings.list_resources(admin_context, 'services')
    assert [(s.host, s.report_count) for s in services] == [('node', 4)]
