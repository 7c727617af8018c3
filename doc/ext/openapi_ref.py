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

"""Sphinx extension: memagg's REST API reference, rendered from OpenAPI.

Two directives read an OpenAPI 3.1 document (a path relative to the page,
or to the source directory when it starts with ``/``)::

    .. openapi-reference:: /../../api-ref/openapi.json

renders one section per resource and, in it, one per operation: its
summary, the microversion it appeared in, whether it needs a token, its path
and query parameters, its request body, its response codes and its success
response's fields (``$ref`` components expanded, nested fields by dotted
name), then the error body every failure has. ::

    .. openapi-microversions:: /../../api-ref/openapi.json

renders the microversion history: each version of
``memagg.api.microversion.VERSIONS``, what it changed, and the operations
and fields the document says appeared in it ("Since X.Y").

The document is the one memagg-api serves (``python -m memagg.cmd.openapi``
writes it), so the reference cannot drift from the API. A document the
directives cannot render (no paths, a dangling ``$ref``, a "Since" naming an
unknown microversion, a version that is not the API's newest) is reported
as a Sphinx warning, which ``sphinx-build -W`` turns into a failure.
"""
import json
import re

from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from memagg.api import microversion

LOG = logging.getLogger(__name__)

_METHODS = ('get', 'put', 'post', 'patch', 'delete')
_SINCE_RE = re.compile(r'\s*Since (\d+)\.(\d+)\.?\s*$')
_SINCE_ANYWHERE_RE = re.compile(r'Since (\d+)\.(\d+)')
_REF_PREFIX = '#/components/schemas/'
# The header every operation takes; the microversion history explains it
# once instead of every operation's parameter table.
_VERSION_HEADER = microversion.HEADER


class DocumentError(Exception):
    """The OpenAPI document cannot be rendered; the message says why."""


def _since(text):
    """The (major, minor) a "Since X.Y" at the end of ``text`` names, or
    None."""
    match = _SINCE_RE.search(text or '')
    return (int(match.group(1)), int(match.group(2))) if match else None


def _without_since(text):
    return _SINCE_RE.sub('', text or '')


def _para(text):
    return nodes.paragraph(text=text)


def _literal_para(text):
    return nodes.paragraph('', '', nodes.literal(text=text))


def _example(title, value):
    """A rubric and the JSON of a real call's body (memagg.api.examples)."""
    text = json.dumps(value, indent=2, sort_keys=True)
    block = nodes.literal_block(text, text)
    block['language'] = 'json'
    return [nodes.rubric(text=title), block]


def _example_request(request):
    """A rubric and the request line and headers of a real call
    (x-memagg-example-request); its body, if any, is shown apart."""
    text = '\n'.join(['%s %s' % (request['method'], request['path'])] + [
        '%s: %s' % item for item in sorted(request['headers'].items())])
    block = nodes.literal_block(text, text)
    block['language'] = 'text'
    return [nodes.rubric(text='Example request'), block]


def _table(headers, rows, widths):
    """A docutils table; each cell is a string or a node."""
    table = nodes.table(classes=['openapi-table'])
    group = nodes.tgroup(cols=len(headers))
    table += group
    for width in widths:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    group += head
    head += _row(headers)
    body = nodes.tbody()
    group += body
    for cells in rows:
        body += _row(cells)
    return table


def _row(cells):
    row = nodes.row()
    for cell in cells:
        entry = nodes.entry()
        entry += cell if isinstance(cell, nodes.Node) else _para(cell)
        row += entry
    return row


def _section(document, title, section_id):
    section = nodes.section(ids=[section_id],
                            names=[nodes.fully_normalize_name(title)])
    section += nodes.title(text=title)
    document.note_implicit_target(section)
    return section


class OpenApiDocument:
    """An OpenAPI document read for rendering: ``$ref`` resolution and the
    text of a schema's type."""

    def __init__(self, path):
        try:
            with open(path, encoding='utf-8') as f:
                self.data = json.load(f)
        except (OSError, ValueError) as exc:
            raise DocumentError('cannot read %s: %s' % (path, exc))
        if not str(self.data.get('openapi', '')).startswith('3.'):
            raise DocumentError('%s is not an OpenAPI 3 document (no '
                                '"openapi": "3.x" field)' % path)
        if not self.data.get('paths'):
            raise DocumentError('%s has no paths' % path)
        self.schemas = self.data.get('components', {}).get('schemas', {})

    def resolve(self, schema):
        """Follow ``$ref`` to the component it names."""
        seen = set()
        while '$ref' in schema:
            ref = schema['$ref']
            name = ref[len(_REF_PREFIX):]
            if not ref.startswith(_REF_PREFIX) or name not in self.schemas:
                raise DocumentError('$ref %r names no component schema'
                                    % ref)
            if name in seen:
                raise DocumentError('$ref cycle through %r' % ref)
            seen.add(name)
            schema = self.schemas[name]
        return schema

    def type_text(self, schema):
        """A reader's name for a schema's type: ``array of Audit``,
        ``string (uuid) or null``, ``string: wss, booked``, with bounds."""
        if '$ref' in schema:
            self.resolve(schema)
            return schema['$ref'][len(_REF_PREFIX):]
        kinds = schema.get('type', 'any')
        kinds = list(kinds) if isinstance(kinds, list) else [kinds]
        words = []
        for kind in kinds:
            if kind == 'array' and 'items' in schema:
                words.append('array of %s' % self.type_text(schema['items']))
            elif (kind == 'object'
                  and isinstance(schema.get('additionalProperties'), dict)):
                words.append('object of %s' % self.type_text(
                    schema['additionalProperties']))
            elif kind == 'string' and 'format' in schema:
                words.append('string (%s)' % schema['format'])
            else:
                words.append(kind)
        text = ' or '.join(words)
        if 'enum' in schema:
            text += ': ' + ', '.join(str(v) for v in schema['enum'])
        bounds = self._bounds(schema)
        return '%s, %s' % (text, bounds) if bounds else text

    @staticmethod
    def _bounds(schema):
        if 'minimum' in schema and 'maximum' in schema:
            return '%s to %s' % (schema['minimum'], schema['maximum'])
        if 'minimum' in schema:
            return 'at least %s' % schema['minimum']
        if 'maximum' in schema:
            return 'at most %s' % schema['maximum']
        if 'maxLength' in schema:
            return '%s to %s characters' % (schema.get('minLength', 0),
                                            schema['maxLength'])
        if 'minLength' in schema:
            return 'at least %s character(s)' % schema['minLength']
        if 'minItems' in schema:
            return 'at least %s item(s)' % schema['minItems']
        return ''

    def fields(self, schema, prefix=''):
        """Yield (dotted name, type text, required, description) for every
        field of an object schema, nested objects and array items
        included (``audits[].uuid``)."""
        schema = self.resolve(schema)
        required = set(schema.get('required', ()))
        for name, prop in schema.get('properties', {}).items():
            full = prefix + name
            target = self.resolve(prop)
            description = prop.get('description') or target.get(
                'description', '')
            yield full, self.type_text(prop), name in required, description
            if 'array' in _kinds(target) and 'items' in target:
                item = self.resolve(target['items'])
                if item.get('properties'):
                    yield from self.fields(item, full + '[].')
            elif target.get('properties'):
                yield from self.fields(target, full + '.')

    def operations(self):
        """Yield (path, method, operation) in the document's order."""
        for path, item in self.data['paths'].items():
            for method in _METHODS:
                if method in item:
                    yield path, method, item[method]

    def since(self, operation):
        """The microversion an operation appeared in."""
        return _since(operation.get('summary')) or microversion.MIN_VERSION


def _kinds(schema):
    kinds = schema.get('type', ())
    return kinds if isinstance(kinds, list) else [kinds]


def _operation_id(method, path):
    return nodes.make_id('%s %s' % (method, path))


def _resource(path, operation):
    """The resource an operation belongs to: the first segment after /v1/,
    or the discovery group for routes that need no token."""
    if operation.get('security') == []:
        return 'API discovery (no token needed)'
    segment = path.strip('/').split('/')[1]
    return segment.capitalize()


class _OpenApiDirective(SphinxDirective):
    required_arguments = 1
    has_content = False

    def load(self):
        """The document, registered as a dependency of this page."""
        rel, path = self.env.relfn2path(self.arguments[0])
        self.env.note_dependency(rel)
        return OpenApiDocument(path)

    def fail(self, message):
        LOG.warning('openapi: %s', message, location=self.get_location())
        return []


class OpenApiReference(_OpenApiDirective):
    """Render every operation of an OpenAPI document."""

    def run(self):
        try:
            doc = self.load()
            self._check_version(doc)
            return self._render(doc)
        except DocumentError as exc:
            return self.fail(str(exc))

    @staticmethod
    def _check_version(doc):
        served = doc.data.get('info', {}).get('version')
        newest = microversion.to_string(microversion.MAX_VERSION)
        if served != newest:
            raise DocumentError(
                'the document is for microversion %s but the API serves up '
                'to %s: regenerate it with python -m memagg.cmd.openapi'
                % (served, newest))

    def _render(self, doc):
        document = self.state.document
        groups = {}
        for path, method, operation in doc.operations():
            title = _resource(path, operation)
            if title not in groups:
                groups[title] = _section(
                    document, title, nodes.make_id('api ' + title))
            groups[title] += self._operation(doc, path, method, operation)
        result = list(groups.values())
        result.append(self._error_section(doc))
        return result

    def _operation(self, doc, path, method, operation):
        title = '%s %s' % (method.upper(), path)
        section = _section(self.state.document, title,
                           _operation_id(method, path))
        section += _para(_without_since(operation.get('summary', '')))
        since = doc.since(operation)
        if since not in microversion.VERSIONS:
            raise DocumentError('%s says "Since %s", which is no microversion '
                                'of memagg.api.microversion.VERSIONS'
                                % (title, microversion.to_string(since)))
        facts = nodes.bullet_list()
        facts += nodes.list_item('', _para(
            'Microversion: %s and later.' % microversion.to_string(since)))
        facts += nodes.list_item('', _para(
            'Authentication: none.' if operation.get('security') == []
            else 'Authentication: a Keystone token (X-Auth-Token).'))
        section += facts
        params = [p for p in operation.get('parameters', ())
                  if p.get('in') in ('path', 'query')]
        if params:
            section += nodes.rubric(text='Parameters')
            section += _table(
                ['Name', 'In', 'Type', 'Required', 'Description'],
                [[_literal_para(p['name']), p['in'],
                  doc.type_text(p.get('schema', {})),
                  'yes' if p.get('required') else 'no',
                  p.get('description') or p.get('schema', {}).get(
                      'description', '')]
                 for p in params],
                [16, 6, 18, 8, 40])
        request = operation.get('x-memagg-example-request')
        if request is not None:
            section += _example_request(request)
        if 'requestBody' in operation:
            section += self._request_body(doc, operation['requestBody'])
        section += self._responses(doc, operation['responses'])
        return section

    def _request_body(self, doc, body):
        schema = body.get('content', {}).get('application/json', {}).get(
            'schema', {})
        result = [nodes.rubric(text='Request body'),
                  _para(body.get('description', ''))]
        rows = [[_literal_para(name), kind, 'yes' if required else 'no',
                 description]
                for name, kind, required, description in doc.fields(schema)]
        if rows:
            result.append(_table(['Field', 'Type', 'Required',
                                  'Description'], rows, [22, 18, 8, 40]))
        else:
            result.append(_para('No fields: send {} or no body.'))
        example = body.get('content', {}).get('application/json', {}).get(
            'example')
        if example is not None:
            result += _example('Example request body', example)
        return result

    def _responses(self, doc, responses):
        result = [nodes.rubric(text='Responses')]
        rows = []
        success = shown = None
        for code, response in sorted(responses.items()):
            schema = response.get('content', {}).get(
                'application/json', {}).get('schema')
            body = doc.type_text(schema) if schema else 'no body'
            meaning = response.get('description', '')
            for name, header in response.get('headers', {}).items():
                if name in (_VERSION_HEADER, 'Vary'):
                    continue
                meaning += '; header %s: %s' % (
                    name, header.get('description', ''))
            rows.append([_literal_para(code), meaning, body])
            if code.startswith('2') and schema and success is None:
                success = (code, schema)
            example = response.get('content', {}).get(
                'application/json', {}).get('example')
            if example is not None:
                shown = (code, example)
        result.append(_table(['Code', 'Meaning', 'Body'], rows,
                             [8, 50, 20]))
        if success:
            code, schema = success
            fields = [[_literal_para(name), kind,
                       'yes' if required else 'no', description]
                      for name, kind, required, description
                      in doc.fields(schema)]
            if fields:
                result.append(nodes.rubric(
                    text='Response body (%s)' % code))
                result.append(_table(['Field', 'Type', 'Always present',
                                      'Description'], fields,
                                     [22, 18, 8, 40]))
        if shown:
            result += _example('Example response body (%s)' % shown[0],
                               shown[1])
        return result

    def _error_section(self, doc):
        section = _section(self.state.document, 'Error body',
                           'api-error-body')
        section += _para(
            'Every response with a 4xx or 5xx code has this JSON body '
            '(the Error schema): one or more errors, each naming its HTTP '
            'status, a code, a title, what to do (detail), the request id '
            'and, for bad input, the field at fault.')
        section += _table(
            ['Field', 'Type', 'Always present', 'Description'],
            [[_literal_para(name), kind, 'yes' if required else 'no',
              description]
             for name, kind, required, description
             in doc.fields({'$ref': _REF_PREFIX + 'Error'})],
            [22, 18, 8, 40])
        return section


class OpenApiMicroversions(_OpenApiDirective):
    """Render the microversion history: each version, what it changed and
    the operations and fields the document marks as added in it."""

    def run(self):
        try:
            doc = self.load()
            added = self._added(doc)
        except DocumentError as exc:
            return self.fail(str(exc))
        rows = []
        for version, change in sorted(microversion.VERSIONS.items()):
            items = nodes.bullet_list()
            for text in added.get(version, ()):
                items += nodes.list_item('', _literal_para(text))
            rows.append([_literal_para(microversion.to_string(version)),
                         change, items if added.get(version) else '-'])
        return [_table(['Version', 'What it changes', 'Added in it'],
                       rows, [8, 44, 30])]

    @staticmethod
    def _added(doc):
        """{version: [operation or schema field]} from the document's
        "Since X.Y" notes."""
        added = {}
        for path, method, operation in doc.operations():
            since = _since(operation.get('summary'))
            if since:
                added.setdefault(since, []).append(
                    '%s %s' % (method.upper(), path))
        # A field shared by a list's and a detail's schema is one change.
        fields = {}
        for name, schema in doc.schemas.items():
            for field, prop in schema.get('properties', {}).items():
                match = _SINCE_ANYWHERE_RE.search(
                    prop.get('description', ''))
                if match:
                    since = (int(match.group(1)), int(match.group(2)))
                    fields.setdefault((since, field), []).append(name)
        for (since, field), names in fields.items():
            added.setdefault(since, []).append(
                '%s (%s)' % (field, ', '.join(names)))
        unknown = sorted(set(added) - set(microversion.VERSIONS))
        if unknown:
            raise DocumentError(
                'the document names microversions %s, which '
                'memagg.api.microversion.VERSIONS does not have'
                % ', '.join(microversion.to_string(v) for v in unknown))
        return added


def setup(app):
    app.add_directive('openapi-reference', OpenApiReference)
    app.add_directive('openapi-microversions', OpenApiMicroversions)
    return {'version': '1.0', 'parallel_read_safe': True,
            'parallel_write_safe': True}
