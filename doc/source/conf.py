"""Sphinx configuration of memagg's documentation."""
project = 'memagg'
copyright = 'memagg developers'
master_doc = 'index'
source_suffix = '.rst'
exclude_patterns = []
html_theme = 'alabaster'
