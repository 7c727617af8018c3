"""The API's WSGI application: ``memagg.wsgi.api:application``.

For uWSGI (what memagg-api runs), mod_wsgi or any WSGI server. Importing
this module parses the configuration (see memagg.wsgi for where it comes
from), sets up logging and builds the API pipeline. Under a pre-forking
server, import it in each worker after the fork (uWSGI's lazy-apps), so
that no worker shares the database pool or message bus connection of
another.
"""
from memagg.api import app
from memagg.conf import CONF
from memagg import wsgi


def init_application():
    """Parse the configuration, set up logging and return the API app."""
    wsgi.configure(CONF)
    app.set_api_defaults(CONF)
    return app.create_app(CONF)


application = init_application()
