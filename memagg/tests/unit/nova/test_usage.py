# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""The cache the filter and the weigher share: how many calls memagg's real
API gets (one per request, one per cache_ttl), and every way the call can
fail (unreachable, no microversion 1.5, an HTTP error, a body that is not
the documented one), none of which raises out of Nova's filter."""
import json
import logging
import threading
import types

from nova.scheduler import filters as nova_filters
from nova.scheduler import weights as nova_weights
import pytest

from memagg.api import app as api_app
from memagg.api import microversion
from memaggclient import host_usages
from memagg.conf import CONF
from memagg.nova import filters
from memagg.nova import usage
from memagg.nova import weights
from memagg.tests.functional import service_procs
from memagg.tests.unit.api import live
from memagg.tests.unit.nova import cluster


class _Scheduler:
    """A RealMemoryFilter and a RealMemoryWeigher, made once as
    nova-scheduler makes them, run through Nova's handlers."""

    def __init__(self):
        self.filter = filters.RealMemoryFilter()
        self.weigher = weights.RealMemoryWeigher()

    def schedule(self, spec, hosts):
        """The names of the hosts that pass for ``spec``, best first."""
        passed = nova_filters.HostFilterHandler().get_filtered_objects(
            [self.filter], hosts, spec)
        weighed = nova_weights.HostWeightHandler().get_weighed_objects(
            [self.weigher], passed, spec)
        return [w.obj.host for w in weighed]


# How many calls


def test_one_call_for_a_request_of_a_hundred_hosts(memagg_options,
                                                   host_usage_calls):
    names = ['host-%03d' % n for n in range(100)]
    for n, name in enumerate(names):
        cluster.report(name, [(4096, 100 * n)])
    hosts = [cluster.host_state(name, 4096) for name in names]

    order = _Scheduler().schedule(cluster.request(2048), hosts)

    assert order[:3] == ['host-000', 'host-001', 'host-002']
    assert len(order) == 100
    assert host_usage_calls() == usage.shared().api_calls == 1


def test_requests_within_cache_ttl_share_one_call(memagg_options,
                                                  host_usage_calls):
    cluster.report('a', [(4096, 1000)])
    hosts = [cluster.host_state('a', 4096), cluster.host_state('b')]

    scheduler = _Scheduler()
    for _ in range(3):
        scheduler.schedule(cluster.request(2048), hosts)

    assert host_usage_calls() == usage.shared().api_calls == 1


def test_cache_ttl_0_calls_once_per_request(memagg_options,
                                            host_usage_calls):
    memagg_options(cache_ttl=0)
    cluster.report('a', [(4096, 1000)])
    hosts = [cluster.host_state('a', 4096), cluster.host_state('b')]

    scheduler = _Scheduler()
    for _ in range(3):
        scheduler.schedule(cluster.request(2048), hosts)

    assert host_usage_calls() == usage.shared().api_calls == 3


def test_a_new_answer_once_cache_ttl_has_passed(memagg_options,
                                                host_usage_calls,
                                                monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(usage, 'time', types.SimpleNamespace(
        monotonic=lambda: clock[0]))
    cluster.report('a', [(4096, 1000)])
    host = cluster.host_state('a', 4096)
    spec = cluster.request(2048, expected_wss_mb='8000')
    flt = filters.RealMemoryFilter()
    assert flt.filter_all([host], cluster.request(
        2048, expected_wss_mb='8000')) == [host]

    # The VM's working set grows past what the request needs...
    cluster.report('a', [(4096, 9000)])
    clock[0] += 9.9
    # ...but the answer is 9.9 s old: still passes.
    assert flt.filter_all([host], spec) == [host]
    assert host_usage_calls() == 1
    clock[0] += 0.1
    # A request still keeps the answer it was given...
    assert flt.filter_all([host], spec) == [host]
    # ...and a new one gets a new answer.
    assert flt.filter_all([host], cluster.request(
        2048, expected_wss_mb='8000')) == []
    assert host_usage_calls() == 2


def test_concurrent_requests_wait_for_one_call(memagg_options,
                                               host_usage_calls):
    cluster.report('a', [(4096, 1000)])
    host = cluster.host_state('a', 4096)
    flt = filters.RealMemoryFilter()
    start = threading.Barrier(8)
    results = []

    def schedule():
        spec = cluster.request(2048)
        start.wait(timeout=30)
        results.append(flt.filter_all([host], spec))

    threads = [threading.Thread(target=schedule) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert results == [[host]] * 8
    assert host_usage_calls() == 1


# Failures


def _unreachable(memagg_options):
    url = 'http://127.0.0.1:%d' % service_procs.free_port()
    memagg_options(endpoint_override=url)
    return url


@pytest.mark.parametrize('on_failure, passed, effect', [
    ('open', ['a', 'b'], 'RealMemoryFilter passes every host'),
    ('closed', [], 'RealMemoryFilter refuses every host')])
def test_memagg_unreachable(memagg_options, warnings_logged, on_failure,
                            passed, effect):
    url = _unreachable(memagg_options)
    memagg_options(on_failure=on_failure)
    hosts = [cluster.host_state('a'), cluster.host_state('b')]
    scheduler = _Scheduler()

    assert scheduler.schedule(cluster.request(2048), hosts) == passed
    assert scheduler.schedule(cluster.request(2048), hosts) == passed

    # One attempt and one line per cache_ttl, saying why and what follows.
    assert usage.shared().api_calls == 1
    (line,) = warnings_logged()
    assert line.startswith('memagg\'s host usages are unavailable: the '
                           'memagg API could not be reached: ')
    assert url in line
    assert line.endswith(
        '; %s ([memagg] on_failure = %s) and RealMemoryWeigher weighs every '
        'host the same, until the next attempt in 10 s'
        % (effect, on_failure))


def test_with_cache_ttl_0_each_request_tries_again(memagg_options,
                                                   warnings_logged):
    _unreachable(memagg_options)
    memagg_options(cache_ttl=0)
    hosts = [cluster.host_state('a'), cluster.host_state('b')]
    scheduler = _Scheduler()

    scheduler.schedule(cluster.request(2048), hosts)
    scheduler.schedule(cluster.request(2048), hosts)

    assert usage.shared().api_calls == 2
    assert [line.endswith('until the next attempt at the next scheduling '
                          'request') for line in warnings_logged()] == [
        True, True]


def test_an_api_without_microversion_1_5(memagg_options, warnings_logged,
                                         monkeypatch, server, caplog):
    caplog.set_level(logging.INFO, logger='memagg.nova')
    monkeypatch.setattr(microversion, 'MAX_VERSION', (1, 4))
    memagg_options(cache_ttl=0)
    cluster.report('a', [(4096, 1000)])
    host = cluster.host_state('a', 4096)
    flt = filters.RealMemoryFilter()
    too_big = cluster.request(2048, expected_wss_mb='15000')

    assert flt.filter_all([host], too_big) == [host]
    assert warnings_logged()[0].startswith(
        'memagg\'s host usages are unavailable: microversion 1.5 is not '
        'served by the memagg API at %s (it serves 1.0 to 1.4); ' % server[0])

    # Upgraded, it answers again.
    monkeypatch.setattr(microversion, 'MAX_VERSION', (1, 5))
    assert flt.filter_all([host], cluster.request(
        2048, expected_wss_mb='15000')) == []
    assert 'memagg\'s host usages are available again' in caplog.messages


class _Answering:
    """WSGI middleware: memagg's real API, but GET /v1/host_usages answers
    ``status`` and ``body`` (what the real API never answers)."""

    def __init__(self, application, status, body):
        self.application = application
        self.status = status
        self.body = body if isinstance(body, bytes) else json.dumps(
            body).encode()

    def __call__(self, environ, start_response):
        if environ['PATH_INFO'] != '/v1/host_usages':
            return self.application(environ, start_response)
        start_response(self.status, [('Content-Type', 'application/json')])
        return [self.body]


def _usage(**fields):
    return dict(dict(host='a', state='active', memory_mb=16384,
                     reserved_mb=512, wss_maxavg_mb=1000, booked_mb=4096,
                     instances=1, remote_mb=0,
                     reported_at='2026-01-01T00:00:00Z'), **fields)


@pytest.mark.parametrize('status, body, reason', [
    ('200 OK', b'<html>proxy error</html>',
     'its answer is not JSON: Expecting value: line 1 column 1 (char 0)'),
    ('200 OK', {'hosts': []},
     "its answer is not the documented host_usages body: no host_usages "
     "list in {'hosts': []}"),
    ('200 OK', {'host_usages': [{'memory_mb': 1}], 'reservoir_free_mb': 0},
     "its answer is not the documented host_usages body: host_usages[0] "
     "has no host name: {'memory_mb': 1}"),
    ('200 OK', {'host_usages': [_usage(memory_mb=-1)],
                'reservoir_free_mb': 0},
     'its answer is not the documented host_usages body: '
     'host_usages[0].memory_mb is -1, not a number of MiB'),
    ('200 OK', {'host_usages': [_usage(booked_mb='4096')],
                'reservoir_free_mb': 0},
     'its answer is not the documented host_usages body: '
     "host_usages[0].booked_mb is '4096', not a number of MiB"),
    ('200 OK', {'host_usages': [_usage(reported_at='yesterday')],
                'reservoir_free_mb': 0},
     'its answer is not the documented host_usages body: '
     "host_usages[0].reported_at is 'yesterday', not a time"),
    ('200 OK', {'host_usages': [_usage()]},
     'its answer is not the documented host_usages body: '
     'the body.reservoir_free_mb is None, not a number of MiB'),
    ('503 Service Unavailable',
     {'errors': [{'status': 503, 'title': 'Service Unavailable',
                  'detail': 'the database is gone'}]},
     'HTTP 503: the database is gone'),
])
def test_an_answer_that_cannot_be_used(memagg_options, warnings_logged,
                                       conf, status, body, reason):
    cluster.report('a', [(4096, 1000)])
    with live.serving(_Answering(api_app.create_app(CONF), status,
                                 body)) as url:
        memagg_options(endpoint_override=url, on_failure='closed')

        assert filters.RealMemoryFilter().filter_all(
            [cluster.host_state('a', 4096)], cluster.request(1024)) == []

    (line,) = warnings_logged()
    assert line.startswith('memagg\'s host usages are unavailable: %s; '
                           % reason)


def test_an_unexpected_error_does_not_leave_the_filter(memagg_options,
                                                       monkeypatch, caplog):
    def broken(self):
        raise RuntimeError('a bug')

    monkeypatch.setattr(host_usages.HostUsageManager, 'list', broken)
    host = cluster.host_state('a')

    assert filters.RealMemoryFilter().filter_all(
        [host], cluster.request(1024)) == [host]
    (error,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert error.exc_info[0] is RuntimeError
    assert 'unavailable: unexpected error: a bug;' in caplog.text
