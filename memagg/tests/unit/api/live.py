"""Serve a WSGI app on a loopback port from a thread, for tests that need a
real HTTP server (functional tests, the benchmark)."""
import contextlib
import threading

from memagg.api import server


@contextlib.contextmanager
def serving(application):
    """Yield the base URL of ``application`` served by memagg-api's server
    on 127.0.0.1 and a free port; shut it down afterwards."""
    httpd = server.make_server(application, '127.0.0.1', 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.url(httpd)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)
