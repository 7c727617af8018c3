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

"""Sphinx configuration of memagg's release notes (reno)."""
project = 'memagg Release Notes'
copyright = 'memagg developers'
extensions = ['openstackdocstheme', 'reno.sphinxext']
master_doc = 'index'
source_suffix = {'.rst': 'restructuredtext'}
exclude_patterns = []

html_theme = 'openstackdocs'
openstackdocs_repo_name = 'openstack/memagg'
openstackdocs_bug_project = 'memagg'
openstackdocs_bug_tag = 'releasenotes'
openstackdocs_use_storyboard = False
# Release notes are one page per series, not versioned like the docs, and
# keep their own title rather than the package's name.
openstackdocs_auto_version = False
openstackdocs_auto_name = False
