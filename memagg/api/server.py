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

"""Serve the API inside the calling process, for what must run it there.

Werkzeug's threaded server (one thread per connection, HTTP/1.1
keep-alive, no eventlet), used only where the API has to share its
process: memagg-aio, whose API, scheduler and compute talk over in-process
messaging, and tests that serve the app from a thread. memagg-api does not
use it: it runs memagg.wsgi.api under uWSGI (memagg.cmd.api).
"""
from werkzeug import serving


def make_server(application, host, port):
    """A server bound to host:port (port 0 picks a free one); call
    serve_forever() on it, and shutdown() from another thread to stop it."""
    return serving.make_server(host, port, application, threaded=True)


def url(server):
    """The base URL clients reach ``server`` at."""
    host = server.server_address[0]
    if ':' in host:
        host = '[%s]' % host
    return 'http://%s:%d' % (host, server.server_port)
