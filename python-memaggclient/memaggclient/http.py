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

"""The client's HTTP layer: one keystoneauth Adapter for the
memory-aggregation service, the microversion agreed with the server, and
failures turned into memaggclient.exceptions.

The endpoint (from the catalog, or ``endpoint_override``) is the API's
root, as memagg-api registers it: the version document is at ``/`` and the
resources under ``/v1/``.
"""
import re
import threading

from keystoneauth1 import adapter
from keystoneauth1 import exceptions as ks_exc

from memaggclient import exceptions

#: The service type memagg-api registers in the catalog and names in the
#: OpenStack-API-Version header.
SERVICE_TYPE = 'memory-aggregation'

#: The microversions this client understands; it never asks for more.
#: The client carries them itself rather than reading the server's list:
#: it installs without the server, and an older client keeps to the
#: versions it was written for against a newer API.
MIN_VERSION = (1, 0)
MAX_VERSION = (1, 14)

_VERSION_RE = re.compile(r'^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$')


def version_string(version):
    """(1, 3) -> '1.3'."""
    return '%d.%d' % version


def parse_version(text):
    """'1.3' -> (1, 3); UnsupportedVersion when not of the form X.Y."""
    match = _VERSION_RE.match(str(text).strip())
    if match is None:
        raise exceptions.UnsupportedVersion(
            'microversion %r is not of the form X.Y (e.g. %s) or latest'
            % (text, version_string(MAX_VERSION)))
    return int(match.group(1)), int(match.group(2))


class HTTPClient:
    """Sends every request of the client through one keystoneauth Adapter
    with the agreed microversion in ``OpenStack-API-Version``.

    ``api_version`` is 'X.Y', or None or 'latest' for the newest version
    both sides support. The server's range is read from its version
    document on the first request (or the first read of ``api_version``),
    once.
    """

    def __init__(self, session, api_version=None, interface=None,
                 region_name=None, endpoint_override=None,
                 **adapter_options):
        self._adapter = adapter.Adapter(
            session, service_type=SERVICE_TYPE, interface=interface,
            region_name=region_name, endpoint_override=endpoint_override,
            **adapter_options)
        if api_version in (None, 'latest'):
            self._requested = None
        else:
            self._requested = parse_version(api_version)
            if not MIN_VERSION <= self._requested <= MAX_VERSION:
                raise exceptions.UnsupportedVersion(
                    'microversion %s is not supported by this client: it '
                    'speaks %s to %s' % (
                        version_string(self._requested),
                        version_string(MIN_VERSION),
                        version_string(MAX_VERSION)))
        self._version = None
        self._lock = threading.Lock()

    @property
    def api_version(self):
        """The microversion in use, as a tuple such as (1, 3)."""
        with self._lock:
            if self._version is None:
                self._version = self._negotiate()
            return self._version

    def _negotiate(self):
        document = self._send('GET', '/', None)['versions'][0]
        low = parse_version(document['min_version'])
        high = parse_version(document['max_version'])
        served = '%s to %s' % (document['min_version'],
                               document['max_version'])
        if self._requested is not None:
            if not low <= self._requested <= high:
                raise exceptions.UnsupportedVersion(
                    'microversion %s is not served by the memagg API at %s '
                    '(it serves %s)' % (
                        version_string(self._requested),
                        self.endpoint, served))
            return self._requested
        chosen = min(MAX_VERSION, high)
        if chosen < max(MIN_VERSION, low):
            raise exceptions.UnsupportedVersion(
                'the memagg API at %s serves microversions %s, none of '
                'which this client (%s to %s) speaks'
                % (self.endpoint, served, version_string(MIN_VERSION),
                   version_string(MAX_VERSION)))
        return chosen

    @property
    def endpoint(self):
        """The API's root URL the requests go to."""
        return self._call(self._adapter.get_endpoint)

    def require(self, version, what):
        """Raise UnsupportedVersion unless the microversion in use is at
        least ``version``; ``what`` names the operation for the message."""
        if self.api_version < version:
            raise exceptions.UnsupportedVersion(
                '%s needs microversion %s or later; this client uses %s'
                % (what, version_string(version),
                   version_string(self.api_version)))

    def request(self, method, path, **kwargs):
        """Send ``method`` ``path`` (relative to the endpoint, or a full
        URL such as a next link) at the microversion in use; return the
        response body as parsed JSON. ``kwargs`` go to keystoneauth
        (``params``, ``json``)."""
        return self._send(method, path, self.api_version, **kwargs)

    def _send(self, method, path, version, **kwargs):
        response = self._call(
            self._adapter.request, path, method, raise_exc=False,
            microversion=version_string(version) if version else None,
            **kwargs)
        if response.status_code >= 400:
            raise exceptions.from_response(response)
        return response.json()

    @staticmethod
    def _call(function, *args, **kwargs):
        try:
            return function(*args, **kwargs)
        except ks_exc.EndpointNotFound as exc:
            raise exceptions.EndpointNotFound(
                'no %s endpoint in the service catalog for this region and '
                'interface (%s)' % (SERVICE_TYPE, exc))
        except ks_exc.ConnectionError as exc:
            raise exceptions.ConnectionFailed(
                'the memagg API could not be reached: %s' % exc)
        except ks_exc.HttpError as exc:
            # From authentication: Keystone refused the credentials.
            raise exceptions.from_status(exc.http_status, exc.message,
                                         request_id=exc.request_id)
        except ks_exc.ClientException as exc:
            raise exceptions.ClientException(str(exc))
