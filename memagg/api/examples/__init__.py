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

"""The API reference's request and response examples, one JSON file per
operation (``{"request": {method, path, headers, body?}, "response":
{status, body}}``), written from real calls by
memagg/tests/unit/api/test_examples.py, which fails when one drifts.
Data only: imports nothing of memagg.
"""
import functools
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

#: Operations without an example: the OpenAPI document is its own.
WITHOUT = frozenset({'root_openapi_document'})


def _path(operation_id):
    return os.path.join(HERE, operation_id + '.json')


@functools.lru_cache(maxsize=None)
def load_all():
    """{operation id: example} of every example file, read once per process
    (GET /v1/openapi.json puts them in every document it builds)."""
    examples = {}
    for name in sorted(os.listdir(HERE)):
        if name.endswith('.json'):
            with open(os.path.join(HERE, name)) as f:
                examples[name[:-len('.json')]] = json.load(f)
    return examples


def load(operation_id):
    """The example of ``operation_id``; None without one."""
    return load_all().get(operation_id)


def write(operation_id, example):
    """Write the example of ``operation_id``."""
    with open(_path(operation_id), 'w') as f:
        f.write(json.dumps(example, indent=2, sort_keys=True) + '\n')
    load_all.cache_clear()
