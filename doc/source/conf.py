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

"""Sphinx configuration of memagg's documentation.

The configuration and policy references and their samples are generated from
memagg's code at build time (oslo.config's and oslo.policy's Sphinx
extensions), and the API reference from ``api-ref/openapi.json``
(``doc/ext/openapi_ref.py``), so none of them can drift from the code.
"""
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.abspath(os.path.join(_HERE, '..', '..'))

# memagg's own Sphinx extensions live in doc/ext.
sys.path.insert(0, os.path.join(_ROOT, 'doc', 'ext'))

extensions = [
    'openstackdocstheme',
    'oslo_config.sphinxext',
    'oslo_config.sphinxconfiggen',
    'config_reference',
    'oslo_policy.sphinxext',
    'oslo_policy.sphinxpolicygen',
    'openapi_ref',
]

project = 'memagg'
copyright = 'memagg developers'
master_doc = 'index'
source_suffix = {'.rst': 'restructuredtext'}
exclude_patterns = []
pygments_style = 'native'

# openstackdocstheme: where "Report a bug" and the source links point.
html_theme = 'openstackdocs'
openstackdocs_repo_name = 'openstack/memagg'
openstackdocs_bug_project = 'memagg'
openstackdocs_bug_tag = 'doc'
openstackdocs_use_storyboard = False
openstackdocs_projects = ['nova', 'keystone', 'devstack', 'oslo.config',
                          'oslo.policy']

# The samples are generated into _static at build time (not kept in the
# repository) and offered for download by the configuration pages.
config_generator_config_file = os.path.join(
    _ROOT, 'etc', 'memagg', 'memagg-config-generator.conf')
sample_config_basename = '_static/memagg'
policy_generator_config_file = os.path.join(
    _ROOT, 'etc', 'memagg', 'memagg-policy-generator.conf')
sample_policy_basename = '_static/memagg'
