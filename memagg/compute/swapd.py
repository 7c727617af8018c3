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

"""Client of memagg-swapd's control socket (one text line each way).

Every request opens its own connection, so a restarted memagg-swapd (or
memagg-compute) needs nothing re-established. Replies are ``OK key=value...``
or ``ERR <ERRNO-NAME> <message>``; each method returns the reply parsed
into Python values.
"""
import socket

# A GHOST reply of the default 65536 events exceeds the 64 KiB request
# limit many times; replies are read up to this size.
MAX_REPLY = 16 * 1024 * 1024

#: Events drained by one GHOST request: their reply stays well under 64 KiB.
GHOST_BATCH = 4096

SWAP_OUT = 'o'
SWAP_IN = 'i'


class SwapdUnavailable(Exception):
    """Nothing answers on the control socket (not running, restarting)."""


class SwapdError(Exception):
    """memagg-swapd refused a request: ``errno_name`` (e.g. ENOMEM,
    ENOENT, EINVAL) and its one-line ``message``."""

    def __init__(self, errno_name, message):
        self.errno_name = errno_name
        self.message = message
        super().__init__('%s %s' % (errno_name, message))


class ProtocolError(SwapdUnavailable):
    """memagg-swapd's reply could not be understood."""


def _ints(value):
    return [int(v) for v in value.split(',') if v]


def _list(value):
    return [v for v in value.split(',') if v]


def parse_reply(line):
    """The key=value pairs of an ``OK`` reply line; raise SwapdError for an
    ``ERR`` line and ProtocolError for anything else."""
    text = line.rstrip('\n')
    word, _, rest = text.partition(' ')
    if word == 'ERR':
        errno_name, _, message = rest.partition(' ')
        raise SwapdError(errno_name or 'EIO', message)
    if word != 'OK':
        raise ProtocolError('memagg-swapd replied %r' % text[:200])
    values = {}
    for token in rest.split():
        key, sep, value = token.partition('=')
        if not sep:
            raise ProtocolError('memagg-swapd replied a field without "=": '
                                '%r' % token[:200])
        values[key] = value
    return values


def format_request(verb, args):
    """``VERB key=value...`` (with the newline) of ``args``; a list value
    is joined with commas. Values must not hold spaces or newlines."""
    parts = [verb]
    for key, value in args.items():
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            value = ','.join(str(v) for v in value)
        value = str(value)
        if not value or any(c.isspace() for c in value):
            raise ValueError('%s: value %r is empty or holds white space'
                             % (key, value))
        parts.append('%s=%s' % (key, value))
    return ' '.join(parts) + '\n'


def slab_spec(slab):
    """``<i>@<endpoint>@<addr>@<rkey>`` of a slab dict (index, endpoint,
    remote_addr, rkey) as EXPORT_CREATE takes it."""
    return '%d@%s@%d@%d' % (slab['index'], slab['endpoint'],
                            slab['remote_addr'], slab['rkey'])


def slab_specs(slabs, slab_size):
    """The ``slabs=`` entries of slab dicts: a run of slabs on one donor at
    consecutive addresses (``slab_size`` apart) is one ``<i>-<j>@...``
    entry, as a donor lays a grant's slabs out in one region; a table of
    thousands of slabs then stays far below the 64 KiB request limit."""
    entries = []
    run = []
    for slab in sorted(slabs, key=lambda s: s['index']):
        if run and not _continues(run[-1], slab, slab_size):
            entries.append(_run_spec(run))
            run = []
        run.append(slab)
    if run:
        entries.append(_run_spec(run))
    return entries


def _continues(prev, slab, slab_size):
    return (slab['index'] == prev['index'] + 1
            and slab['endpoint'] == prev['endpoint']
            and slab['rkey'] == prev['rkey']
            and slab['remote_addr'] == prev['remote_addr'] + slab_size)


def _run_spec(run):
    if len(run) == 1:
        return slab_spec(run[0])
    return '%d-%d@%s@%d@%d' % (run[0]['index'], run[-1]['index'],
                               run[0]['endpoint'], run[0]['remote_addr'],
                               run[0]['rkey'])


def parse_slab_spec(spec, slab_size):
    """The slab dicts of an EXPORT_CREATE/EXPORT_DESCRIBE slab entry
    (``<i>[-<j>]@<endpoint>@<addr>@<rkey>``; slab k of a range at addr +
    (k - i) * ``slab_size``)."""
    # The endpoint (tcp://h:p) holds no '@': split from both ends.
    indexes, rest = spec.split('@', 1)
    endpoint, addr, rkey = rest.rsplit('@', 2)
    first, _, last = indexes.partition('-')
    first = int(first)
    return [{'index': index, 'endpoint': endpoint,
             'remote_addr': int(addr) + (index - first) * slab_size,
             'rkey': int(rkey)}
            for index in range(first, int(last or first) + 1)]


def parse_events(value):
    """[(SWAP_OUT or SWAP_IN, page)] of a GHOST ``events`` value."""
    events = []
    for item in _list(value):
        kind, page = item[0], item[1:]
        if kind not in (SWAP_OUT, SWAP_IN) or not page.isdigit():
            raise ProtocolError('GHOST event %r is not o<page> or i<page>'
                                % item[:40])
        events.append((kind, int(page)))
    return events


class SwapdClient:
    """memagg-swapd's control socket at ``path``; ``timeout`` s per
    request."""

    def __init__(self, path, timeout=10.0):
        self.path = path
        self.timeout = timeout

    def request(self, verb, **args):
        """Send one request; return the reply's fields (strings)."""
        line = format_request(verb, args).encode()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            try:
                sock.connect(self.path)
                sock.sendall(line)
                reply = self._read_line(sock)
            except OSError as exc:
                raise SwapdUnavailable(
                    'memagg-swapd does not answer on %s: %s'
                    % (self.path, exc)) from exc
        finally:
            sock.close()
        return parse_reply(reply)

    def _read_line(self, sock):
        chunks, size = [], 0
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                raise ProtocolError('memagg-swapd on %s closed the '
                                    'connection before a full reply'
                                    % self.path)
            chunks.append(chunk)
            size += len(chunk)
            if chunk.endswith(b'\n') or b'\n' in chunk:
                break
            if size > MAX_REPLY:
                raise ProtocolError('memagg-swapd\'s reply exceeds %d bytes'
                                    % MAX_REPLY)
        data = b''.join(chunks)
        return data[:data.index(b'\n') + 1].decode('utf-8', 'replace')

    def ping(self):
        """{version (int), transport, rdma, endpoint}."""
        reply = self.request('PING')
        reply['version'] = int(reply.get('version', 0))
        return reply

    def grant_alloc(self, grant, key, slab_size, slabs):
        """Allocate donated slabs ``slabs`` (indexes) of ``slab_size``
        bytes for ``grant``: {endpoint, rkey, slabs: [{index,
        remote_addr}]}, only those allocated. SwapdError ENOMEM when none
        could be."""
        reply = self.request('GRANT_ALLOC', grant=grant, key=key,
                             slab_size=slab_size, slabs=list(slabs))
        allocated = []
        for item in _list(reply.get('slabs', '')):
            index, _, addr = item.partition(':')
            allocated.append({'index': int(index), 'remote_addr': int(addr)})
        return {'endpoint': reply['endpoint'], 'rkey': int(reply['rkey']),
                'slabs': allocated}

    def grant_free(self, grant, slabs=None):
        """Free ``grant``'s donated slabs (all when None); the number
        freed."""
        reply = self.request('GRANT_FREE', grant=grant,
                             slabs=None if slabs is None else list(slabs))
        return int(reply['freed'])

    def donor_stats(self):
        """{capacity, used (bytes of slabs, bounded by capacity), seals
        (bytes of their pages' seals, on top), grants, slabs, refused}, and
        with the TCP transport the donor port's refused frames:
        frames_refused_key (unknown grant), frames_refused_auth (failed
        their MAC or sequence check) and frames_malformed."""
        return {k: int(v) for k, v in self.request('DONOR_STATS').items()}

    def export_create(self, grant, key, size, slab_size, local, slabs,
                      adopt=False, seal=False):
        """Create ``grant``'s export over ``slabs`` (dicts of index,
        endpoint, remote_addr, rkey) with its durability copy at
        ``local``: {name, socket}, and key_offer with ``adopt`` and
        ``seal``. ``local`` must be a regular file of its own below
        memagg-swapd's state_dir/local, reached through directories only
        (remote_grants.local_copy_path): SwapdError EINVAL otherwise.

        With ``seal`` the pages are encrypted and authenticated with a key
        of the export's own that memagg-swapd makes and keeps: donors and
        the network see only ciphertext.  An adopted sealed export waits
        for that key from the migration's source: its key_offer (a public
        key) goes to the source's ``export_key_wrap`` and what that returns
        to ``export_key_install`` here.

        With ``adopt`` (a live migration's destination) the pages are on
        the donors already: every slab must have one (SwapdError EINVAL
        otherwise), the local copy is emptied, and reads go to the donors
        until it is rebuilt from them.  That rebuild waits for
        ``export_rebuild`` (a migration's finish: run during the
        migration, it would slow the copy of the guest's memory), then
        runs in the background (``export_stats``' rebuild_left)."""
        reply = self.request('EXPORT_CREATE', grant=grant, key=key,
                             size=size, slab_size=slab_size, local=local,
                             slabs=slab_specs(slabs, slab_size),
                             adopt=1 if adopt else None,
                             seal=1 if seal else None)
        export = {'name': reply['name'], 'socket': reply['socket']}
        if 'key_offer' in reply:
            export['key_offer'] = reply['key_offer']
        return export

    def export_key_wrap(self, grant, offer):
        """``grant``'s page key sealed for the holder of public key
        ``offer`` (another memagg-swapd's key_offer): hex that only it can
        open."""
        return self.request('EXPORT_KEY_WRAP', grant=grant,
                            offer=offer)['wrapped']

    def export_key_install(self, grant, wrapped):
        """Open ``wrapped`` (from the source's ``export_key_wrap``) with
        this adopted export's pending key and keep the page key; SwapdError
        EBADMSG when it does not open."""
        self.request('EXPORT_KEY_INSTALL', grant=grant, wrapped=wrapped)

    def export_describe(self, grant):
        """What EXPORT_CREATE took for ``grant``: {grant, key, size,
        slab_size, local, slabs: [slab dicts], local_slabs: [indexes]
        (only when some are), stale_slabs: [indexes] (slabs whose local
        copy missed writes, its device having failed or filled: only their
        donors have all of their data; only when some are)}."""
        reply = self.request('EXPORT_DESCRIBE', grant=grant)
        for key in ('size', 'slab_size'):
            if key in reply:
                reply[key] = int(reply[key])
        reply['slabs'] = [slab for spec in _list(reply.get('slabs', ''))
                          for slab in parse_slab_spec(
                              spec, reply.get('slab_size', 0))]
        for key in ('local_slabs', 'stale_slabs'):
            if key in reply:
                reply[key] = _ints(reply[key])
        return reply

    def export_reclaim(self, grant, slabs=None):
        """Serve ``grant``'s slabs (indexes; all when None) from the local
        copy from now on; the number reclaimed."""
        reply = self.request('EXPORT_RECLAIM', grant=grant,
                             slabs='all' if slabs is None else list(slabs))
        return int(reply['reclaimed'])

    def export_promote(self, grant, slab):
        """Move ``grant``'s slab ``slab`` (a dict of index, endpoint,
        remote_addr, as grant_alloc on the donor gave it), served from
        the local copy until now, to that donor while the guest runs: its
        written pages are copied there, then the table says so (saved).
        The number of pages copied. SwapdError EALREADY when the slab is
        on a donor; with any error of the copy the slab stays local and
        the donor's slab is the caller's to free."""
        reply = self.request('EXPORT_PROMOTE', grant=grant,
                             slab=slab['index'], endpoint=slab['endpoint'],
                             addr=slab['remote_addr'])
        return int(reply['pages'])

    def export_rebuild(self, grant):
        """Start the rebuild of adopted export ``grant``'s local copy from
        its donors: {rebuild_left (int, 4 KiB pages still to go through)}.
        Nothing changes when it runs or is done already, or when the export
        is not adopted; SwapdError ENOENT when ``grant`` has no export."""
        return {k: int(v) for k, v in
                self.request('EXPORT_REBUILD', grant=grant).items()}

    def export_drop(self, grant, delete=False):
        """Drop ``grant``'s export (its NBD clients are disconnected); the
        local copy is deleted only with ``delete``."""
        self.request('EXPORT_DROP', grant=grant, delete=1 if delete else None)

    def export_list(self):
        """The grant uuids with an export."""
        return _list(self.request('EXPORT_LIST').get('grants', ''))

    def export_stats(self, grant):
        """``grant``'s export counters (ints): reads, writes, read_bytes,
        write_bytes, zero_reads, local_reads, remote_errors,
        degraded_slabs, stale_slabs (slabs whose local copy missed writes:
        see export_describe), clients, remote_read_bytes and
        remote_write_bytes
        (bytes read from and written to donors, promotions' copies too),
        lat_p50_us, lat_p99_us (and
        read_lat_p50_us, read_lat_p99_us of reads alone), rebuild_left
        (4 KiB pages an adopted export's rebuild has still to go through,
        all of them until ``export_rebuild``; 0 when none),
        stored_pages (4 KiB pages that count as written), sealed (1 when
        its pages are encrypted), key_pending (1 while an adopted sealed
        export waits for its page key), auth_failures (pages from
        donors that failed their authentication), frame_auth_failures
        (donor replies whose frame failed its MAC check on the wire), and
        each tier's ledger in 4 KiB pages, l1_* for slabs on donors and
        l2_* for those in the local copy only: puts, gets, flushes,
        moved_in, moved_out, evicts and used (used = puts + moved_in -
        flushes - moved_out - evicts but for I/O racing a move)."""
        return {k: int(v) for k, v in
                self.request('EXPORT_STATS', grant=grant).items()}

    def ghost(self, grant, max_events=None):
        """Drain up to ``max_events`` swap events of ``grant``'s export:
        ([(SWAP_OUT or SWAP_IN, page)], dropped)."""
        reply = self.request('GHOST', grant=grant, max=max_events)
        return (parse_events(reply.get('events', '')),
                int(reply.get('dropped', 0)))

    def ghost_all(self, grant, batch=GHOST_BATCH, limit=1 << 20):
        """Drain ``grant``'s events in batches until fewer than ``batch``
        come (at most ``limit``, the daemon's ring size): (events,
        dropped)."""
        events, dropped = [], 0
        while len(events) < limit:
            more, lost = self.ghost(grant, batch)
            events.extend(more)
            dropped += lost
            if len(more) < batch:
                break
        return events, dropped
