"""Sphinx configuration of memagg's release notes (reno)."""
project = 'memagg Release Notes'
copyright = 'memagg developers'
extensions = ['reno.sphinxext']
master_doc = 'index'
source_suffix = '.rst'
exclude_patterns = []
html_theme = 'alabaster'
html_static_path = []
