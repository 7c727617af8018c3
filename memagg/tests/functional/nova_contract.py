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

"""Nova's compute API contract, loaded from the installed ``nova``
package: its newest microversion and the JSON schemas that it attaches to
its API controllers, each for a range of microversions, picked for the
microversion of a request exactly as Nova picks them
(``nova.api.validation``: the ``request_body_schemas``,
``request_query_schemas`` and ``response_body_schemas`` of the controller
method, with their microversion ranges). The Nova double
(memagg.tests.functional.nova_double) is held to it.

Importing nova registers nova's options in the global oslo.config CONF,
where some clash with memagg's, so a child interpreter reads the schemas
and passes them as JSON.
"""
import json
import subprocess
import sys

import jsonschema
import pytest

# Endpoint name -> (module of nova.api.openstack.compute, controller class,
# method) whose schemas the double applies.
ENDPOINTS = {
    'servers.show': ('servers', 'ServersController', 'show'),
    'migrate_server.migrate_live': (
        'migrate_server', 'MigrateServerController', '_migrate_live'),
    'server_migrations.index': (
        'server_migrations', 'ServerMigrationsController', 'index'),
    'server_migrations.delete': (
        'server_migrations', 'ServerMigrationsController', 'delete'),
    'services.index': ('services', 'ServiceController', 'index'),
    'services.update': ('services', 'ServiceController', 'update'),
}
REQUEST_BODY = 'request_body'
REQUEST_QUERY = 'request_query'
RESPONSE_BODY = 'response_body'

_DUMP_SCHEMAS = """
import importlib, json, sys
from nova.api.openstack import api_version_request


def bound(version):
    return None if version.is_null() else version.get_string()


out = {}
for name, (module, cls, method) in json.loads(sys.argv[1]).items():
    func = getattr(getattr(importlib.import_module(
        'nova.api.openstack.compute.' + module), cls), method)
    out[name] = {}
    for kind in ('request_body', 'request_query', 'response_body'):
        schemas = getattr(func, kind + '_schemas', None)
        if schemas is not None:
            out[name][kind] = [[bound(low), bound(high), schema]
                               for schema, low, high in schemas._schemas]
json.dump({'max': api_version_request.max_api_version().get_string(),
           'schemas': out}, sys.stdout)
"""


def version(text):
    """(major, minor) of a microversion such as '2.53'."""
    major, minor = text.split('.')
    return int(major), int(minor)


def version_text(value):
    return '%d.%d' % value


class NovaContract:
    """Nova's newest microversion and its controllers' schemas, as the
    installed nova package declares them."""

    def __init__(self, max_version, schemas):
        self.max_version = max_version
        self.schemas = schemas

    def schema(self, endpoint, kind, at):
        """The ``kind`` schema of ``endpoint`` in force at microversion
        ``at`` ((major, minor)), or None when Nova declares none."""
        for low, high, schema in self.schemas[endpoint].get(kind, []):
            if ((low is None or version(low) <= at)
                    and (high is None or at <= version(high))):
                return schema
        return None

    def check(self, endpoint, kind, at, document):
        """Raise jsonschema.ValidationError when ``document`` breaks the
        schema; AssertionError when Nova declares none for ``at``."""
        schema = self.schema(endpoint, kind, at)
        if schema is None:
            raise AssertionError('Nova declares no %s schema of %s at %s'
                                 % (kind, endpoint, version_text(at)))
        jsonschema.Draft202012Validator(
            schema, format_checker=jsonschema.FormatChecker()).validate(
            document)


def load_contract():
    """The NovaContract of the installed nova package (read in a child
    interpreter); skips when nova is not installed."""
    pytest.importorskip('nova', reason='the nova package provides Nova\'s '
                                       'API schemas')
    endpoints = {name: list(spec) for name, spec in ENDPOINTS.items()}
    out = subprocess.run(
        [sys.executable, '-c', _DUMP_SCHEMAS, json.dumps(endpoints)],
        capture_output=True, text=True, timeout=180, check=True,
        stdin=subprocess.DEVNULL).stdout
    contract = json.loads(out)
    return NovaContract(contract['max'], contract['schemas'])
