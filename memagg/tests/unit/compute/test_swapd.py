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

"""SwapdClient against a small control-socket server in the test.

The server answers canned lines (what the contract's control protocol
says memagg-swapd replies) and records each request, so these tests check
the client's requests and its parsing; memagg-swapd's own protocol is
tested by its C suite and by test_swapd_client_real.py.
"""
import os
import socket
import threading

import pytest

from memagg.compute import swapd

GRANT = '0b4f7e0c-8d7a-4f3b-9a51-3c2d1e0f9a8b'
KEY = 'ab' * 32


class Server:
    """A unix-socket server: one connection per request, each answered
    with ``replies[verb]`` (a line, or a callable of the request line)."""

    def __init__(self, path):
        self.path = path
        self.replies = {}
        self.requests = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(8)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = b''
                while not data.endswith(b'\n'):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                line = data.decode()
                self.requests.append(line)
                verb = line.split(' ', 1)[0].strip()
                reply = self.replies.get(verb, 'ERR EINVAL verb: unknown')
                if callable(reply):
                    reply = reply(line)
                if reply is not None:
                    conn.sendall(reply.encode())

    def close(self):
        # shutdown() wakes the accept() that close() alone leaves blocked.
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self._thread.join(5)


@pytest.fixture
def server(tmp_path):
    srv = Server(str(tmp_path / 'control.sock'))
    yield srv
    srv.close()


@pytest.fixture
def client(server):
    return swapd.SwapdClient(server.path, timeout=2)


def test_ping_parses_version_and_transport(server, client):
    server.replies['PING'] = ('OK version=1 transport=tcp '
                              'rdma=unavailable:no_RDMA_device '
                              'endpoint=tcp://127.0.0.1:7450\n')
    assert client.ping() == {'version': 1, 'transport': 'tcp',
                             'rdma': 'unavailable:no_RDMA_device',
                             'endpoint': 'tcp://127.0.0.1:7450'}
    assert server.requests == ['PING\n']


def test_grant_alloc_sends_the_slabs_and_parses_a_partial_reply(server,
                                                                client):
    server.replies['GRANT_ALLOC'] = (
        'OK endpoint=tcp://10.0.0.2:7450 rkey=4242 '
        'slabs=0:140000000000,1:140067108864\n')
    reply = client.grant_alloc(GRANT, KEY, 64 << 20, [0, 1, 2])
    assert server.requests == [
        'GRANT_ALLOC grant=%s key=%s slab_size=67108864 slabs=0,1,2\n'
        % (GRANT, KEY)]
    assert reply == {'endpoint': 'tcp://10.0.0.2:7450', 'rkey': 4242,
                     'slabs': [{'index': 0, 'remote_addr': 140000000000},
                               {'index': 1, 'remote_addr': 140067108864}]}


def test_err_reply_raises_swapd_error_with_errno_and_message(server,
                                                             client):
    server.replies['GRANT_ALLOC'] = (
        'ERR ENOMEM slabs: no capacity left (0 of 0 bytes free)\n')
    with pytest.raises(swapd.SwapdError) as info:
        client.grant_alloc(GRANT, KEY, 64 << 20, [0])
    assert info.value.errno_name == 'ENOMEM'
    assert info.value.message == 'slabs: no capacity left (0 of 0 bytes free)'


def test_export_create_formats_each_slab(server, client):
    server.replies['EXPORT_CREATE'] = (
        'OK name=memagg-swap-%s socket=/run/x/%s.sock\n' % (GRANT, GRANT))
    slabs = [{'index': 0, 'endpoint': 'tcp://h1:7450', 'remote_addr': 4096,
              'rkey': 7},
             {'index': 1, 'endpoint': 'tcp://h2:7450', 'remote_addr': 8192,
              'rkey': 9}]
    reply = client.export_create(GRANT, KEY, 128 << 20, 64 << 20,
                                 '/var/lib/x/a.img', slabs)
    assert reply == {'name': 'memagg-swap-%s' % GRANT,
                     'socket': '/run/x/%s.sock' % GRANT}
    assert server.requests[0] == (
        'EXPORT_CREATE grant=%s key=%s size=134217728 slab_size=67108864 '
        'local=/var/lib/x/a.img slabs=0@tcp://h1:7450@4096@7,'
        '1@tcp://h2:7450@8192@9\n' % (GRANT, KEY))


def test_export_create_adopt_sends_runs_of_slabs_as_ranges(server, client):
    server.replies['EXPORT_CREATE'] = (
        'OK name=memagg-swap-%s socket=/run/x/%s.sock\n' % (GRANT, GRANT))
    slab = 64 << 20
    slabs = [{'index': i, 'endpoint': 'tcp://h1:7450',
              'remote_addr': 4096 + i * slab, 'rkey': 7} for i in range(3)]
    slabs.append({'index': 3, 'endpoint': 'tcp://h2:7450', 'remote_addr': 0,
                  'rkey': 9})
    client.export_create(GRANT, KEY, 4 * slab, slab, '/l/a.img',
                         list(reversed(slabs)), adopt=True)
    assert server.requests[0] == (
        'EXPORT_CREATE grant=%s key=%s size=268435456 slab_size=67108864 '
        'local=/l/a.img slabs=0-2@tcp://h1:7450@4096@7,'
        '3@tcp://h2:7450@0@9 adopt=1\n' % (GRANT, KEY))


def test_a_table_of_thousands_of_slabs_fits_in_one_request():
    slab = 64 << 20
    # 4000 slabs over 5 donors, each lending its share in one region.
    slabs = [{'index': i, 'endpoint': 'tcp://192.168.100.%d:7450' % (i // 800),
              'remote_addr': 140000000000000 + (i % 800) * slab, 'rkey': 0}
             for i in range(4000)]
    line = swapd.format_request('EXPORT_CREATE', {
        'grant': GRANT, 'key': KEY, 'size': 4000 * slab, 'slab_size': slab,
        'local': '/var/lib/memagg/swapd/copies/%s/%s.img' % (GRANT, GRANT),
        'slabs': swapd.slab_specs(slabs, slab), 'adopt': 1})
    assert len(line) < 1024
    assert ',800-1599@tcp://192.168.100.1:7450@140000000000000@0,' in line
    # Scattered addresses cost one entry each, as before.
    assert swapd.slab_specs([slabs[0], slabs[801]], slab) == [
        '0@tcp://192.168.100.0:7450@140000000000000@0',
        '801@tcp://192.168.100.1:7450@140000067108864@0']


def test_export_describe_round_trips_the_slab_table(server, client):
    server.replies['EXPORT_DESCRIBE'] = (
        'OK grant=%s key=%s size=268435456 slab_size=67108864 '
        'local=/l/a.img slabs=0@tcp://h1:7450@4096@7,1-3@tcp://h2:7450@8192@9'
        ' local_slabs=0,2 stale_slabs=1,3\n' % (GRANT, KEY))
    described = client.export_describe(GRANT)
    assert described['size'] == 256 << 20
    assert described['local'] == '/l/a.img'
    assert described['slabs'][1] == {'index': 1, 'endpoint': 'tcp://h2:7450',
                                     'remote_addr': 8192, 'rkey': 9}
    assert described['slabs'][3] == {'index': 3, 'endpoint': 'tcp://h2:7450',
                                     'remote_addr': 8192 + (128 << 20),
                                     'rkey': 9}
    assert len(described['slabs']) == 4
    assert described['local_slabs'] == [0, 2]
    assert described['stale_slabs'] == [1, 3]


def test_export_stats_are_ints_with_the_rebuild(server, client):
    server.replies['EXPORT_STATS'] = (
        'OK reads=1 writes=2 read_bytes=4096 write_bytes=8192 zero_reads=0 '
        'local_reads=0 remote_errors=0 degraded_slabs=0 clients=1 '
        'lat_p50_us=10 lat_p99_us=20 rebuild_left=16384 stored_pages=65536\n')
    stats = client.export_stats(GRANT)
    assert stats['rebuild_left'] == 16384
    assert stats['stored_pages'] == 65536
    assert stats['clients'] == 1


def test_export_rebuild_starts_it_and_says_what_is_left(server, client):
    server.replies['EXPORT_REBUILD'] = 'OK rebuild_left=16384\n'
    assert client.export_rebuild(GRANT) == {'rebuild_left': 16384}
    assert server.requests == ['EXPORT_REBUILD grant=%s\n' % GRANT]
    server.replies['EXPORT_REBUILD'] = (
        'ERR ENOENT grant: no export of %s here\n' % GRANT)
    with pytest.raises(swapd.SwapdError) as caught:
        client.export_rebuild(GRANT)
    assert caught.value.errno_name == 'ENOENT'


def test_list_stats_free_reclaim_and_drop(server, client):
    server.replies.update({
        'EXPORT_LIST': 'OK grants=%s,%s\n' % (GRANT, GRANT.upper()),
        'DONOR_STATS': ('OK capacity=1073741824 used=134217728 '
                        'seals=1048576 grants=1 slabs=2 refused=3\n'),
        'GRANT_FREE': 'OK freed=2\n',
        'EXPORT_RECLAIM': 'OK reclaimed=4\n',
        'EXPORT_DROP': 'OK\n',
    })
    assert client.export_list() == [GRANT, GRANT.upper()]
    assert client.donor_stats() == {'capacity': 1 << 30, 'used': 128 << 20,
                                    'seals': 1 << 20, 'grants': 1,
                                    'slabs': 2, 'refused': 3}
    assert client.grant_free(GRANT) == 2
    assert client.grant_free(GRANT, [3]) == 2
    assert client.export_reclaim(GRANT) == 4
    assert client.export_reclaim(GRANT, [1, 2]) == 4
    client.export_drop(GRANT)
    client.export_drop(GRANT, delete=True)
    assert server.requests[2:] == [
        'GRANT_FREE grant=%s\n' % GRANT,
        'GRANT_FREE grant=%s slabs=3\n' % GRANT,
        'EXPORT_RECLAIM grant=%s slabs=all\n' % GRANT,
        'EXPORT_RECLAIM grant=%s slabs=1,2\n' % GRANT,
        'EXPORT_DROP grant=%s\n' % GRANT,
        'EXPORT_DROP grant=%s delete=1\n' % GRANT]


def test_export_promote_names_the_slab_and_its_donor(server, client):
    server.replies['EXPORT_PROMOTE'] = 'OK pages=1024\n'
    slab = {'index': 3, 'endpoint': 'tcp://10.0.0.2:7440',
            'remote_addr': 140000, 'rkey': 0}

    assert client.export_promote(GRANT, slab) == 1024
    assert server.requests == [
        'EXPORT_PROMOTE grant=%s slab=3 endpoint=tcp://10.0.0.2:7440 '
        'addr=140000\n' % GRANT]
    server.replies['EXPORT_PROMOTE'] = (
        'ERR EALREADY slab: slab 3 is on donor tcp://10.0.0.2:7440 already\n')
    with pytest.raises(swapd.SwapdError) as caught:
        client.export_promote(GRANT, slab)
    assert caught.value.errno_name == 'EALREADY'


def test_empty_export_list(server, client):
    server.replies['EXPORT_LIST'] = 'OK grants=\n'
    assert client.export_list() == []


def test_ghost_parses_events_in_order(server, client):
    server.replies['GHOST'] = 'OK events=o12,o13,i12,o7 dropped=5\n'
    assert client.ghost(GRANT, 10) == (
        [('o', 12), ('o', 13), ('i', 12), ('o', 7)], 5)
    assert server.requests == ['GHOST grant=%s max=10\n' % GRANT]


def test_ghost_all_drains_in_batches_until_a_short_one(server, client):
    batches = iter(['OK events=o1,o2 dropped=1\n', 'OK events=o3,i1 '
                    'dropped=0\n', 'OK events=i2 dropped=0\n'])
    server.replies['GHOST'] = lambda line: next(batches)
    events, dropped = client.ghost_all(GRANT, batch=2)
    assert events == [('o', 1), ('o', 2), ('o', 3), ('i', 1), ('i', 2)]
    assert dropped == 1
    assert len(server.requests) == 3


def test_a_malformed_ghost_event_is_a_protocol_error(server, client):
    server.replies['GHOST'] = 'OK events=o1,x2 dropped=0\n'
    with pytest.raises(swapd.ProtocolError):
        client.ghost(GRANT)


def test_long_reply_is_read_whole(server, client):
    events = ','.join('o%d' % i for i in range(60000))
    server.replies['GHOST'] = 'OK events=%s dropped=0\n' % events
    got, _ = client.ghost(GRANT, 65536)
    assert len(got) == 60000 and got[-1] == ('o', 59999)


def test_no_server_is_swapd_unavailable(tmp_path):
    client = swapd.SwapdClient(str(tmp_path / 'none.sock'), timeout=1)
    with pytest.raises(swapd.SwapdUnavailable) as info:
        client.ping()
    assert 'none.sock' in str(info.value)


def test_a_closed_connection_without_reply_is_unavailable(server, client):
    server.replies['PING'] = lambda line: None
    with pytest.raises(swapd.SwapdUnavailable):
        client.ping()


def test_a_reply_that_is_neither_ok_nor_err(server, client):
    server.replies['PING'] = 'HELLO\n'
    with pytest.raises(swapd.ProtocolError) as info:
        client.ping()
    assert 'HELLO' in str(info.value)


def test_a_silent_server_times_out_as_unavailable(tmp_path):
    path = str(tmp_path / 'silent.sock')
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    try:
        client = swapd.SwapdClient(path, timeout=0.3)
        with pytest.raises(swapd.SwapdUnavailable) as info:
            client.ping()
        assert 'timed out' in str(info.value)
    finally:
        listener.close()
        os.unlink(path)


def test_values_with_spaces_are_refused_before_sending(client, server):
    with pytest.raises(ValueError) as info:
        client.export_create(GRANT, KEY, 1, 1, '/a path/x.img', [])
    assert 'local' in str(info.value)
    assert server.requests == []
