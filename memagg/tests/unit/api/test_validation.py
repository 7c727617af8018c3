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

import datetime

import pytest
from werkzeug import datastructures

from memagg.api.controllers import base
from memagg.api import request_schemas
from memagg.api import schemas
from memagg.api import validation
from memagg.common import exceptions


def _query(**args):
    return validation.validate_query(
        datastructures.MultiDict(args),
        request_schemas.list_query('services', max_limit=50))


def test_values_are_typed():
    assert _query(limit='5', disabled='True', marker='7') == {
        'limit': 5, 'disabled': True, 'marker': 7}


@pytest.mark.parametrize('args, field, fragment', [
    ({'limit': 'ten'}, 'limit', 'whole number'),
    ({'limit': '51'}, 'limit', 'from 1 to 50'),
    ({'limit': '-1'}, 'limit', 'from 1 to 50'),
    ({'disabled': 'maybe'}, 'disabled', 'true or false'),
    ({'sort_key': 'secret'}, 'sort_key', 'one of id, host'),
    ({'sort_dir': 'up'}, 'sort_dir', 'asc, desc'),
    ({'colour': 'red'}, 'colour', 'accepts: binary, disabled, host'),
    # No database driver binds it (SQLite raised OverflowError: a 500).
    ({'marker': str(2 ** 64)}, 'marker',
     'from 1 to 9223372036854775807'),
])
def test_errors_name_field_and_fix(args, field, fragment):
    with pytest.raises(exceptions.InvalidParameter) as info:
        _query(**args)
    assert info.value.kwargs['field'] == field
    assert fragment in info.value.message


def test_repeated_parameter():
    args = datastructures.MultiDict([('limit', '1'), ('limit', '2')])
    with pytest.raises(exceptions.InvalidParameter, match='given 2 times'):
        validation.validate_query(args,
                                  request_schemas.list_query('hosts', 10))


def test_time_range_format():
    schema = request_schemas.list_query('wss_samples', 10)
    assert validation.validate_query(
        datastructures.MultiDict({'since': '2024-05-01T12:00:00+02:00'}),
        schema) == {'since': '2024-05-01T12:00:00+02:00'}
    with pytest.raises(exceptions.InvalidParameter, match='ISO 8601'):
        validation.validate_query(
            datastructures.MultiDict({'until': 'yesterday'}), schema)


@pytest.mark.parametrize('text, expected', [
    ('2024-05-01T12:00:00Z', datetime.datetime(2024, 5, 1, 12)),
    ('2024-05-01T14:00:00+02:00', datetime.datetime(2024, 5, 1, 12)),
    ('2024-05-01T12:00:00', datetime.datetime(2024, 5, 1, 12)),
    ('2024-05-01', datetime.datetime(2024, 5, 1)),
    ('not a date', None),
    # The offset moves it before year 1 (OverflowError: was a 500).
    ('0001-01-01T00:00:00+01:00', None),
])
def test_parse_datetime_gives_naive_utc(text, expected):
    assert validation.parse_datetime(text) == expected


def test_path_uuid():
    with pytest.raises(exceptions.InvalidParameter, match="'uuid'"):
        validation.validate_path('uuid', 'abc', schemas.UUID)


def _unbounded_integers(schema, path):
    if isinstance(schema, list):
        for i, item in enumerate(schema):
            yield from _unbounded_integers(item, '%s[%d]' % (path, i))
        return
    if not isinstance(schema, dict):
        return
    types = schema.get('type')
    if 'integer' in (types if isinstance(types, list) else [types]) and (
            'maximum' not in schema or 'minimum' not in schema):
        yield path
    for key, value in schema.items():
        yield from _unbounded_integers(value, path + '.' + key)


def test_every_integer_a_request_may_give_is_bounded():
    """What the code below the API can handle is what the schema lets
    through: an audit's migration_cooldown of 10^11 s once passed and
    failed the audit with OverflowError."""
    unbounded = []
    for route in base.ROUTES:
        for part, schema in (('body', route.body),
                             ('query', route.query_schema(1000)),
                             ('path', route.path_params)):
            unbounded += _unbounded_integers(
                schema, '%s %s' % (route.operation_id, part))
    assert unbounded == []
