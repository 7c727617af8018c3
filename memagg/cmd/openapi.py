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

"""Print the API's OpenAPI document for the default configuration, the
text kept in api-ref/openapi.json:

    python -m memagg.cmd.openapi > api-ref/openapi.json
"""
import sys

from memagg.api import controllers  # noqa: F401  (registers the routes)
from memagg.api import openapi
from memagg.conf import CONF


def main():
    """Print the document for the default [api] max_limit."""
    CONF([], project='memagg', default_config_files=[])
    sys.stdout.write(openapi.dumps(openapi.build(CONF.api.max_limit)))


if __name__ == '__main__':
    main()
