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

"""The documentation and the release notes build with Sphinx warnings as
errors, as ``tox -e docs`` and ``tox -e releasenotes`` build them, and the
generated references hold what the code and the OpenAPI document define."""
import html
import json
import os
import re
import subprocess
import sys

import pytest

from memagg.api import microversion

pytestmark = [pytest.mark.functional, pytest.mark.slow]

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                    '..'))
BUILD_TIMEOUT = 300


def _start_build(source, out):
    """sphinx-build -W --keep-going -b html, with this interpreter (the
    .venv's, which has doc/requirements.txt and memagg installed)."""
    log = open(out.parent / (out.name + '.log'), 'w+')
    proc = subprocess.Popen(
        [sys.executable, '-m', 'sphinx', '-W', '--keep-going', '-j', 'auto',
         '-q', '-b', 'html', '-d', str(out / '.doctrees'),
         os.path.join(ROOT, source), str(out)],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log,
        stderr=subprocess.STDOUT)
    return proc, log


def _finish(proc, log):
    try:
        proc.wait(timeout=BUILD_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log.seek(0)
    output = log.read()
    log.close()
    return proc.returncode, output


@pytest.fixture(scope='module')
def built(tmp_path_factory):
    """Build the docs and the release notes at once (two processes); return
    their output directories."""
    tmp = tmp_path_factory.mktemp('docs')
    docs, notes = tmp / 'docs', tmp / 'releasenotes'
    builds = [_start_build('doc/source', docs),
              _start_build('releasenotes/source', notes)]
    results = [_finish(*build) for build in builds]
    return {'docs': (docs, *results[0]), 'releasenotes': (notes, *results[1])}


@pytest.mark.parametrize('name', ['docs', 'releasenotes'])
def test_builds_without_warnings(built, name):
    out, returncode, output = built[name]
    assert returncode == 0, output
    assert (out / 'index.html').is_file()


def test_api_reference_has_every_operation_of_the_openapi_document(built):
    out, returncode, output = built['docs']
    assert returncode == 0, output
    page = (out / 'reference' / 'api-ref.html').read_text()
    with open(os.path.join(ROOT, 'api-ref', 'openapi.json')) as f:
        document = json.load(f)
    missing = ['%s %s' % (method.upper(), path)
               for path, item in document['paths'].items()
               for method in item
               if '>%s %s<' % (method.upper(), path) not in page]
    assert not missing, 'not in the API reference: %s' % missing
    # Every operation with an example shows its request, a GET's too.
    shown = [operation for item in document['paths'].values()
             for operation in item.values()
             if 'x-memagg-example-request' in operation]
    assert len(shown) == 23
    assert page.count('>Example request<') == len(shown)
    text = html.unescape(re.sub(r'<[^>]+>', '', page))
    assert ('GET /v1/hosts\nOpenStack-API-Version: memory-aggregation %s'
            % microversion.to_string(microversion.MAX_VERSION)) in text
    # The microversion history: every version with what it changed, and
    # operations and fields 1.2 to 1.5 added.
    history = page[page.index('id="microversion-history"'):
                   page.index('id="operations"')]
    history = ' '.join(html.unescape(re.sub(r'<[^>]+>', ' ', history)).split())
    for version, change in microversion.VERSIONS.items():
        assert microversion.to_string(version) in history
        assert ' '.join(change.split()) in history
    for added in ('POST /v1/audits/{uuid}/execute', 'DELETE /v1/grants/{uuid}',
                  'POST /v1/hosts/{name}/reclaim', 'POST /v1/migrations',
                  'GET /v1/host_usages',
                  'slab_size_mb (Grant, GrantDetail)'):
        assert added in history, added


def test_configuration_and_policy_references_come_from_the_code(built):
    out, returncode, output = built['docs']
    assert returncode == 0, output
    config = (out / 'configuration' / 'config.html').read_text()
    # memagg's own options and those of the libraries' namespaces.
    for option in ('reservoir.slab_size_mb', 'api.max_limit',
                   'consolidation.memory_basis', 'DEFAULT.transport_url',
                   'keystone_authtoken.www_authenticate_uri',
                   'oslo_policy.policy_file'):
        assert 'id="%s"' % option in config, option
    policy = (out / 'configuration' / 'policy.html').read_text()
    for rule in ('memagg:grant:create', 'memagg:audit:execute',
                 'memagg:instance:list:all_projects'):
        assert rule in policy, rule
    samples = {path.name for path in (out / '_downloads').glob('*/*')}
    assert samples == {'memagg.conf.sample', 'memagg.policy.yaml.sample'}


def test_release_notes_render_the_notes(built):
    out, returncode, output = built['releasenotes']
    assert returncode == 0, output
    assert 'New Features' in (out / 'unreleased.html').read_text()
