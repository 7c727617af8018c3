"""memagg.api.wsgi:init_application, the uwsgi/mod_wsgi entry point."""
from memagg.api import wsgi
from memagg.conf import CONF
from memagg.tests.unit.api import conftest


def test_init_application_reads_named_config(monkeypatch, tmp_path,
                                             sqlite_db):
    config = tmp_path / 'memagg.conf'
    config.write_text('[api]\nauth_strategy = noauth\nmax_limit = 7\n'
                      '[database]\nconnection = %s\n' % sqlite_db)
    monkeypatch.setenv('MEMAGG_CONFIG_FILES', str(config))
    library_default = CONF.database.max_retries
    # As in a fresh uwsgi worker: nothing parsed yet.
    CONF.clear()
    try:
        client = conftest.Client(wsgi.init_application())
        assert CONF.api.max_limit == 7
        # Requests fail fast rather than wait out oslo.db's retry loop.
        assert CONF.database.max_retries == 0
    finally:
        # set_default outlives the conf fixture; other tests expect oslo.db's.
        CONF.set_default('max_retries', library_default, group='database')
    assert client.get('/v1/hosts?limit=7').status_code == 200
    assert client.get('/v1/hosts?limit=8').status_code == 400
