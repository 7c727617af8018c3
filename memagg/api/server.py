"""The threaded HTTP server memagg-api and memagg-aio serve the API with.

Werkzeug's threaded server: one thread per connection, HTTP/1.1 keep-alive,
no eventlet. Production deployments may instead run memagg.api.wsgi under
uwsgi or mod_wsgi.
"""
from werkzeug import serving


def make_server(application, host, port):
    """A server bound to host:port (port 0 picks a free one); call
    serve_forever() on it, and shutdown() from another thread to stop it."""
    return serving.make_server(host, port, application, threaded=True)


def url(server):
    """The base URL clients reach ``server`` at."""
    host = server.server_address[0]
    if ':' in host:
        host = '[%s]' % host
    return 'http://%s:%d' % (host, server.server_port)
