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

"""memagg's exceptions. Each carries the HTTP status the API maps it to."""


class MemaggException(Exception):
    """Base class: ``msg_fmt`` is formatted with the keyword arguments."""

    msg_fmt = 'An unknown error occurred.'
    code = 500

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if message is None:
            message = self.msg_fmt % kwargs
        self.message = message
        super().__init__(message)


class Invalid(MemaggException):
    msg_fmt = 'Invalid input: %(reason)s'
    code = 400


class InvalidParameter(Invalid):
    """A named field of a request or a call is wrong; says how to fix it."""

    msg_fmt = "Invalid value for '%(field)s': %(reason)s"


class BodyTooLarge(MemaggException):
    """A request body over [api] max_request_body_size, refused unread."""

    msg_fmt = ('The request body is %(size)s bytes; this API takes at most '
               '%(limit)d ([api] max_request_body_size)')
    code = 413


class UnsupportedMediaType(MemaggException):
    msg_fmt = ('Content-Type %(given)r: send the body as application/json')
    code = 415


class NotFound(MemaggException):
    msg_fmt = '%(resource)s %(id)s could not be found.'
    code = 404


class MarkerNotFound(InvalidParameter):
    def __init__(self, marker):
        super().__init__(field='marker',
                         reason='no item %s in this listing; pass the id of '
                                'an item the previous page returned' % marker)


class Forbidden(MemaggException):
    msg_fmt = 'Policy does not allow %(action)s to be performed.'
    code = 403


class Conflict(MemaggException):
    msg_fmt = '%(reason)s'
    code = 409


class ServiceUnavailable(MemaggException):
    msg_fmt = '%(reason)s'
    code = 503


class RPCTimeout(MemaggException):
    msg_fmt = ('No reply from %(target)s within %(timeout)s s to %(method)s: '
               'is the service running and connected to the message bus?')
    code = 504
