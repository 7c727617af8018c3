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

"""Version discovery (/, /v1/) and the OpenAPI document; no token needed."""
import flask

from memagg.api.controllers import base
from memagg.api import microversion
from memagg.api import openapi
from memagg.api import schemas


def _version_document():
    return {
        'id': 'v1.0',
        'status': 'CURRENT',
        'min_version': microversion.to_string(microversion.MIN_VERSION),
        'max_version': microversion.to_string(microversion.MAX_VERSION),
        'links': [{'rel': 'self', 'href': base.link('/v1/')}],
    }


_VERSIONS = schemas.closed_object({
    'versions': {'type': 'array', 'items': schemas.ref('Version')}})


@base.route('/', 'List API versions: v1 and its microversion range.',
            _VERSIONS, public=True)
def versions(query):
    return {'versions': [_version_document()]}


@base.route('/v1/', 'Show API v1 and its microversion range.',
            schemas.item_response('version', 'Version'), public=True)
def version_v1(query):
    return {'version': _version_document()}


@base.route('/v1/openapi.json', 'This API\'s OpenAPI 3.1 document.',
            {'type': 'object', 'required': ['openapi', 'paths']},
            public=True)
def openapi_document(query):
    return openapi.build(flask.current_app.config['max_limit'])
