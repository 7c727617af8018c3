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

"""The errors memagg's client raises.

Every failure of a call is a ClientException: an HTTP error of the API
(HttpError and its subclasses by status, with the API's message, the field
at fault and the request id), a version the server does not serve
(UnsupportedVersion), or an API that cannot be reached (ConnectionFailed,
EndpointNotFound). ``str()`` of each is one line a person can act on.
"""


def _one_line(text):
    return ' '.join(str(text).split())


class ClientException(Exception):
    """Base of every error memagg's client raises.

    ``message`` is the reason in one line; ``request_id`` the API's request
    id when the API answered.
    """

    def __init__(self, message, request_id=None):
        self.message = _one_line(message)
        self.request_id = request_id
        super().__init__(self.message)

    def __str__(self):
        if self.request_id:
            return '%s (request %s)' % (self.message, self.request_id)
        return self.message


class UnsupportedVersion(ClientException):
    """The microversion asked for is not one both the client and the
    server support, or an operation needs a newer one than in use."""


class ConnectionFailed(ClientException):
    """The API could not be reached (refused, timed out, DNS, TLS)."""


class EndpointNotFound(ClientException):
    """No memory-aggregation endpoint in the catalog for the region and
    interface asked for."""


class HttpError(ClientException):
    """The API answered with an error status.

    ``status_code`` is the HTTP status; ``field`` the request parameter
    the API named as at fault, if any; ``code`` the API's error code
    (e.g. ``memagg.not_found``).
    """

    status_code = None

    def __init__(self, message, status_code=None, request_id=None,
                 field=None, code=None):
        super().__init__(message, request_id)
        if status_code is not None:
            self.status_code = status_code
        self.field = field
        self.code = code

    def __str__(self):
        text = 'HTTP %s: %s' % (self.status_code, self.message)
        if self.request_id:
            text += ' (request %s)' % self.request_id
        return text


class BadRequest(HttpError):
    """400: the request is malformed; ``field`` names the culprit."""

    status_code = 400


class Unauthorized(HttpError):
    """401: no valid token."""

    status_code = 401


class Forbidden(HttpError):
    """403: policy does not allow this to the caller."""

    status_code = 403


class NotFound(HttpError):
    """404: no such resource (or route at this microversion)."""

    status_code = 404


class NotAcceptable(HttpError):
    """406: the server does not serve the microversion sent."""

    status_code = 406


class Conflict(HttpError):
    """409: the resource's state does not allow the operation."""

    status_code = 409


class ServiceUnavailable(HttpError):
    """503: the API or a service behind it cannot serve now; retry."""

    status_code = 503


_BY_STATUS = {cls.status_code: cls for cls in (
    BadRequest, Unauthorized, Forbidden, NotFound, NotAcceptable, Conflict,
    ServiceUnavailable)}


def from_response(response):
    """The HttpError for an error ``response`` (a requests.Response) of
    the API, with the message, field, code and request id it gives."""
    status = response.status_code
    request_id = response.headers.get('x-openstack-request-id')
    message, field, code = None, None, None
    try:
        error = response.json()['errors'][0]
    except (ValueError, KeyError, IndexError, TypeError):
        # Not memagg's error body (a proxy's page, for one).
        message = response.text.strip() or response.reason
    else:
        message = error.get('detail') or error.get('title')
        field, code = error.get('field'), error.get('code')
        request_id = request_id or error.get('request_id')
    return from_status(status, message or 'HTTP %d' % status,
                       request_id=request_id, field=field, code=code)


def from_status(status_code, message, **kwargs):
    """The HttpError subclass for ``status_code`` (HttpError itself for
    a status without one), made with ``message`` and ``kwargs``."""
    cls = _BY_STATUS.get(status_code, HttpError)
    return cls(message, status_code=status_code, **kwargs)
