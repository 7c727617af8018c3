"""WSGI entry point for uwsgi or mod_wsgi: memagg.api.wsgi:init_application.

Config files are memagg's defaults (/etc/memagg/memagg.conf), or the ones
named, comma-separated, in the MEMAGG_CONFIG_FILES environment variable.
"""
import os

from oslo_log import log as logging

from memagg.api import app
from memagg.conf import CONF


def init_application():
    """Parse the configuration, set up logging and return the API app."""
    files = os.environ.get('MEMAGG_CONFIG_FILES')
    logging.register_options(CONF)
    CONF([], project='memagg',
         default_config_files=files.split(',') if files else None)
    logging.setup(CONF, 'memagg')
    app.set_api_defaults(CONF)
    return app.create_app(CONF)
