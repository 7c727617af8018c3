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
