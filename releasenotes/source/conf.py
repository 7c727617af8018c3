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
