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

"""The API's WSGI application: ``memagg.wsgi.api:application``.

For uWSGI (what memagg-api runs), mod_wsgi or any WSGI server. Importing
this module parses the configuration (see memagg.wsgi for where it comes
from), sets up logging and builds the API pipeline. Under a pre-forking
server, import it in each worker after the fork (uWSGI's lazy-apps), so
that no worker shares the database pool or message bus connection of
another.
"""
from memagg.api import app
from memagg.conf import CONF
from memagg import wsgi


def init_application():
    """Parse the configuration, set up logging and return the API app."""
    wsgi.configure(CONF)
    app.set_api_defaults(CONF)
    return app.create_app(CONF)


application = init_application()
