"""memagg-api: serve the REST API with a threaded HTTP server."""
import sys

from oslo_log import log as logging

from memagg.api import app
from memagg.api import server
from memagg.conf import CONF

LOG = logging.getLogger(__name__)


def main(argv=None):
    """Parse --config-file etc., then serve on [api] host:port until killed."""
    logging.register_options(CONF)
    CONF(sys.argv[1:] if argv is None else argv, project='memagg')
    logging.setup(CONF, 'memagg')
    app.set_api_defaults(CONF)
    httpd = server.make_server(app.create_app(CONF), CONF.api.host,
                               CONF.api.port)
    LOG.info('memagg-api serving on %s/ (auth_strategy %s)',
             server.url(httpd), CONF.api.auth_strategy)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        LOG.info('memagg-api stopping')
    finally:
        httpd.server_close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
