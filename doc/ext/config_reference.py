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

"""``show-options`` whose ``:config-file:`` is found like any Sphinx path.

oslo.config's directive opens ``:config-file:`` relative to the directory
sphinx-build runs in. This one resolves it relative to the page (or to the
source directory when it starts with ``/``), so the configuration reference
takes its namespaces from ``etc/memagg/memagg-config-generator.conf``, the
file the sample generator reads, wherever the build runs.
"""
from oslo_config import sphinxext


class ShowOptions(sphinxext.ShowOptionsDirective):
    """oslo.config's ``show-options`` with a page-relative config file."""

    def run(self):
        if 'config-file' in self.options:
            env = self.state.document.settings.env
            rel, path = env.relfn2path(self.options['config-file'],
                                       env.docname)
            env.note_dependency(rel)
            self.options['config-file'] = path
        return super().run()


def setup(app):
    app.setup_extension('oslo_config.sphinxext')
    app.add_directive('show-options', ShowOptions, override=True)
    return {'version': '1.0', 'parallel_read_safe': True,
            'parallel_write_safe': True}
