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

"""RabbitMQ unreachable at start: memagg-scheduler keeps retrying with
backoff and says so in its log, then connects once the bus answers."""
import urllib.parse

import pytest

from memagg.db import listings as db_listings
from memagg.tests.functional import service_procs
from memagg.tests import polling

pytestmark = [pytest.mark.functional, pytest.mark.slow]


def test_scheduler_retries_until_rabbitmq_answers(sqlite_db, rabbit_url,
                                                  admin_context, tmp_path):
    real = urllib.parse.urlsplit(rabbit_url)
    port = service_procs.free_port()
    # The same credentials and virtual host, on a port nothing listens on.
    closed_url = real._replace(
        netloc='%s@127.0.0.1:%d' % (real.netloc.rsplit('@', 1)[0], port))
    config = service_procs.write_config(tmp_path / 'memagg.conf', {
        'DEFAULT': {'transport_url': urllib.parse.urlunsplit(closed_url),
                    'report_interval': 1, 'host': 'retry-host'},
        'database': {'connection': sqlite_db},
        # Short oslo.messaging reconnect pauses keep the test quick.
        'oslo_messaging_rabbit': {'rabbit_retry_interval': 1,
                                  'rabbit_retry_backoff': 1,
                                  'rabbit_interval_max': 2},
    })
    proc = service_procs.Process('memagg-scheduler',
                                 ['--config-file', str(config)],
                                 tmp_path / 'scheduler.log')
    forwarder = None
    try:
        bus = 'rabbit://127.0.0.1:%d' % port
        polling.wait_for(
            lambda: ('not connected to the message bus %s' % bus
                     in proc.log()) or not proc.alive(), 30,
            message='"still retrying" in the scheduler log')
        assert proc.alive(), proc.log()
        assert 'still retrying with backoff' in proc.log()
        assert not db_listings.list_resources(admin_context, 'services')

        forwarder = service_procs.TcpForwarder(
            port, (real.hostname, real.port or 5672))
        polling.wait_for(
            lambda: ('connected to the message bus %s;' % bus in proc.log()
                     or not proc.alive()), 60,
            message='scheduler connected through the forwarder')
        assert proc.alive(), proc.log()
        rows = polling.wait_for(
            lambda: db_listings.list_resources(admin_context, 'services'), 30,
            message='heartbeat row')
        assert (rows[0].host, rows[0].binary) == (
            'retry-host', 'memagg-scheduler')
    finally:
        code = proc.stop()
        if forwarder is not None:
            forwarder.stop()
    assert code == 0, proc.log()
