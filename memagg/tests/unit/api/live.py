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

"""Serve a WSGI app on a loopback port from a thread, for tests that need a
real HTTP server (functional tests, the benchmark)."""
import contextlib
import threading

from memagg.api import server

#: How often a served loop looks whether shutdown() was asked for.
POLL_S = 0.02


@contextlib.contextmanager
def serving(application):
    """Yield the base URL of ``application`` served by memagg-api's server
    on 127.0.0.1 and a free port; shut it down afterwards."""
    httpd = server.make_server(application, '127.0.0.1', 0)
    # shutdown() waits for the loop's next look at its flag: every
    # poll_interval (0.5 s by default), in every test's teardown.
    thread = threading.Thread(target=httpd.serve_forever,
                              kwargs={'poll_interval': POLL_S}, daemon=True)
    thread.start()
    try:
        yield server.url(httpd)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)
