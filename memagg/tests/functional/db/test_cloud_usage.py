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

"""The cloud's history buckets on SQLite, MariaDB and PostgreSQL (real
servers): each backend counts the seconds from the range's start its own
way, and must cut the same buckets."""
import datetime

from memagg.db import cloud_usage as db_cloud_usage
from memagg.db import reports as db_reports

T0 = datetime.datetime(2024, 5, 1, 23, 59, 0)
VMS = ['30000000-0000-4000-8000-00000000000%d' % i for i in range(2)]


def test_buckets_are_whole_steps_from_since(admin_context, any_db):
    # Samples at 0, 59, 60, 179 and 180 s: with 60 s buckets, the first
    # two share bucket 0 (across midnight), then one each in 1, 2 and 3.
    offsets = (0, 59, 60, 179, 180)
    for host, uuid, booked in (('h-a', VMS[0], 4096), ('h-b', VMS[1], 2048)):
        db_reports.report_ingest(
            admin_context, dict(name=host, memory_mb=8192, reserved_mb=512),
            [dict(uuid=uuid, booked_mb=booked)],
            [dict(instance_uuid=uuid, wss_mb=100 + s, wss_maxavg_mb=None
                  if s == 59 else 1000 + s, current_mb=booked,
                  estimator='badis',
                  sampled_at=T0 + datetime.timedelta(seconds=s))
             for s in offsets])

    rows = db_cloud_usage.usage_by_bucket(
        admin_context, T0, T0 + datetime.timedelta(seconds=179), 60)

    # Until is included; the sample at 180 s is after it.
    assert rows == [
        (0, 'h-a', 4096, 1000), (0, 'h-b', 2048, 1000),
        (1, 'h-a', 4096, 1060), (1, 'h-b', 2048, 1060),
        (2, 'h-a', 4096, 1179), (2, 'h-b', 2048, 1179)]
    assert db_cloud_usage.host_capacities(admin_context) == {
        'h-a': 7680, 'h-b': 7680}
