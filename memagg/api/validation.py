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

"""Validate query strings, path parameters and request bodies against JSON
Schemas.

Query values arrive as strings; each is converted to the type its schema
names before validation, so the schemas state real types (integer, boolean)
and the error says which parameter is wrong and how to write it. A body
field deeper in the body is named by its dotted path
(``parameters.overload_cpu_params``).
"""
import datetime
import json
import re

import jsonschema
from oslo_utils import timeutils
from oslo_utils import uuidutils

from memagg.common import exceptions

FORMAT_CHECKER = jsonschema.FormatChecker(formats=())

_INT_RE = re.compile(r'^-?[0-9]+$')
_BOOLEANS = {'true': True, 'false': False}
# How deep a request body may nest: memagg's deepest schema nests 3, and
# a parser's recursion must never be what refuses a body.
MAX_BODY_DEPTH = 32


@FORMAT_CHECKER.checks('uuid')
def _is_uuid(value):
    return not isinstance(value, str) or uuidutils.is_uuid_like(value)


@FORMAT_CHECKER.checks('date-time')
def _is_datetime(value):
    return not isinstance(value, str) or parse_datetime(value) is not None


@FORMAT_CHECKER.checks('uri')
def _is_uri(value):
    return not isinstance(value, str) or '://' in value


def parse_datetime(value):
    """ISO 8601 string -> naive UTC datetime (the DB's form), or None."""
    try:
        # fromisoformat reads offsets; 'Z' needs Python 3.11, so map it.
        parsed = datetime.datetime.fromisoformat(
            value[:-1] + '+00:00' if value.endswith(('Z', 'z')) else value)
        return timeutils.normalize_time(parsed)
    except (ValueError, OverflowError):
        # OverflowError: an offset that moves the time out of years 1-9999.
        return None


def _coerce(value, schema):
    types = schema.get('type')
    types = types if isinstance(types, list) else [types]
    if 'integer' in types and _INT_RE.match(value):
        return int(value)
    if 'boolean' in types and value.lower() in _BOOLEANS:
        return _BOOLEANS[value.lower()]
    return value


_HINTS = {
    'integer': 'give a whole number',
    'boolean': 'give true or false',
    'uuid': 'give a UUID such as 2f1c5a5e-8d4b-4c1e-9d7e-3b7a1c2d4e5f',
    'date-time': 'give an ISO 8601 date-time such as 2024-05-01T12:00:00Z',
    'object': 'give a JSON object',
    'string': 'give a string',
}


def _describe(error, what):
    """Turn a jsonschema error into (field, reason with the fix); ``what``
    names an unknown member (query parameter, field)."""
    path = [str(part) for part in error.path]
    field = '.'.join(path) or None
    validator = error.validator
    if validator == 'additionalProperties':
        properties = error.schema.get('properties', {})
        unknown = sorted(set(error.instance) - set(properties))
        allowed = ', '.join(sorted(properties)) or 'none'
        return '.'.join(path + [unknown[0]]), (
            'unknown %s; %s accepts: %s' % (
                what, field or 'this request', allowed))
    if validator == 'required':
        missing = [name for name in error.validator_value
                   if name not in error.instance]
        return '.'.join(path + missing[:1]), (
            'required %s missing; add it' % what)
    if validator == 'type':
        expected = error.validator_value
        expected = expected[0] if isinstance(expected, list) else expected
        return field, 'got %r: %s' % (error.instance,
                                      _HINTS.get(expected, 'give a '
                                                 + expected))
    if validator == 'format':
        return field, 'got %r: %s' % (error.instance,
                                      _HINTS[error.validator_value])
    if validator in ('minimum', 'maximum'):
        prop = error.schema
        return field, 'got %s: give a value from %s to %s' % (
            error.instance, prop.get('minimum', '-inf'),
            prop.get('maximum', 'inf'))
    if validator == 'enum':
        return field, 'got %r: give one of %s' % (
            error.instance, ', '.join(map(str, error.validator_value)))
    if validator in ('minLength', 'maxLength'):
        if 'maxLength' not in error.schema:
            return field, 'got %r: give at least %d character(s)' % (
                error.instance, error.schema['minLength'])
        return field, 'length must be %s to %s characters' % (
            error.schema.get('minLength', 0), error.schema['maxLength'])
    return field, error.message


def validate(instance, schema, what='query parameter'):
    """Validate an already-typed dict; raise InvalidParameter on the first
    error (the one jsonschema ranks most relevant)."""
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=FORMAT_CHECKER)
    error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
    if error is not None:
        field, reason = _describe(error, what)
        raise exceptions.InvalidParameter(field=field, reason=reason)


def check_media_type(content_type, raw):
    """A body, or a request that names its body's type, must be JSON;
    a request with neither is an empty body."""
    if not content_type and not raw:
        return
    media, _, params = (content_type or '').partition(';')
    charset = params.strip().lower().replace(' ', '')
    if (media.strip().lower() != 'application/json'
            or charset not in ('', 'charset=utf-8')):
        raise exceptions.UnsupportedMediaType(given=content_type or None,
                                              field='Content-Type')


def _depth(value):
    """How deep a parsed JSON value nests (a scalar is 0), without
    recursion."""
    deepest, todo = 0, [(value, 0)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, (dict, list)):
            depth += 1
            deepest = max(deepest, depth)
            todo.extend((child, depth) for child in (
                item.values() if isinstance(item, dict) else item))
    return deepest


def validate_body(raw, schema):
    """Parse a request body (bytes of JSON; empty means ``{}``) and
    validate it; return the dict."""
    if not raw.strip():
        body = {}
    else:
        try:
            body = json.loads(raw)
        except RecursionError:
            body = None
        except (ValueError, UnicodeDecodeError) as exc:
            raise exceptions.InvalidParameter(
                field='body', reason='not valid JSON (%s); send a JSON '
                                     'object' % exc)
        if body is None or _depth(body) > MAX_BODY_DEPTH:
            raise exceptions.InvalidParameter(
                field='body', reason='nested deeper than %d levels; send '
                                     'the fields the schema names'
                % MAX_BODY_DEPTH)
    if not isinstance(body, dict):
        raise exceptions.InvalidParameter(
            field='body', reason='got %s: send a JSON object' % (
                type(body).__name__))
    validate(body, schema, what='field')
    return body


def validate_query(args, schema):
    """Validate a request's query (a werkzeug MultiDict); return a dict of
    typed values."""
    values = {}
    for name in args:
        given = args.getlist(name)
        if len(given) > 1:
            raise exceptions.InvalidParameter(
                field=name, reason='given %d times: give it once'
                % len(given))
        prop = schema['properties'].get(name, {})
        values[name] = _coerce(given[0], prop)
    validate(values, schema)
    return values


def validate_path(name, value, schema):
    """Validate one path parameter, e.g. an instance's UUID."""
    validate({name: value}, {'type': 'object',
                             'properties': {name: schema}})
    return value
