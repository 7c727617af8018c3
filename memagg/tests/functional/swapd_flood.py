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

"""A flood of unauthenticated peers on memagg-swapd's donor port, for
test_swapd_bounds.py and benchmarks/swapd_flood.py: 1,000 idle
connections, 100 headers of 32 MiB WRITEs with unknown grants and 10,000
frames of random grants, all at once, from 127.0.0.2-127.0.0.8 (the caps
count by source address; a consumer on 127.0.0.1 keeps its own).

:func:`start` sends the flood once, each part in a thread of the caller.
:class:`Flood` keeps it up until stopped, in a process of its own: each
set of connections opened again once the donor has closed all of it, the
frames 10,000 after 10,000.
:class:`Sampler` records the peaks of the donor's threads and memory.
"""
import collections
import multiprocessing
import multiprocessing.connection
import os
import random
import resource
import select
import threading
import uuid

from memagg.tests.functional import swapd_frames

MIB = 1 << 20
MAX_LEN = 32 * MIB
IDLE_CONNECTIONS = 1000
IDLE_SOURCES = ['127.0.0.%d' % i for i in range(2, 7)]
WRITE_HEADERS = 100
WRITE_SOURCE = '127.0.0.7'
RANDOM_FRAMES = 10000
FRAMES_SOURCE = '127.0.0.8'
FRAMES_PER_CONNECTION = 1000
BURST = 100
# The idle connections, the WRITE headers' and one of the random frames'.
DESCRIPTORS = 4096
# Threads of memagg-swapd besides its donor connections': its own and the
# Python interpreter's that runs it.
THREADS_BESIDES = 16
# How often a held part looks whether the donor has closed its connections
# and a stopping flood whether it is asked to stop.
POLL_S = 0.2

READ, WRITE = swapd_frames.READ, swapd_frames.WRITE
connect = swapd_frames.connect


def raise_descriptor_limit():
    """Raise this process's soft limit of open files to DESCRIPTORS, which
    the flood needs; False when the hard limit is lower."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < DESCRIPTORS:
        return False
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, DESCRIPTORS), hard))
    return True


def idle(port, held, refused, count=IDLE_CONNECTIONS):
    """``count`` connections that send nothing, spread over IDLE_SOURCES
    (200 from each of 5 by default), appended to ``held``; the indexes of
    those that could not connect to ``refused``."""
    for i in range(count):
        try:
            held.append(connect(port, IDLE_SOURCES[i % len(IDLE_SOURCES)],
                                hello=False))
        except OSError:
            refused.append(i)


def write_headers(port, held, count=WRITE_HEADERS):
    """``count`` connections from WRITE_SOURCE, each past its HELLO a
    32 MiB WRITE header of an unknown grant and no payload; their sockets
    appended to ``held``."""
    for _ in range(count):
        try:
            session = connect(port, WRITE_SOURCE)
            held.append(session.sock)
            session.sock.sendall(session.request(
                WRITE, uuid.uuid4().bytes, os.urandom(32), length=MAX_LEN))
        except (OSError, EOFError):
            pass        # closed at accept: over the cap of WRITE_SOURCE


def random_grants(port, statuses, count=RANDOM_FRAMES, stop=None):
    """``count`` READ frames of random grants and keys from FRAMES_SOURCE,
    FRAMES_PER_CONNECTION on each connection in bursts of BURST, their
    replies' statuses appended to ``statuses``; cut short at a burst's end
    once ``stop`` (an Event) is set."""
    for _ in range(count // FRAMES_PER_CONNECTION):
        session = connect(port, FRAMES_SOURCE)
        with session.sock:
            for _ in range(FRAMES_PER_CONNECTION // BURST):
                if stop is not None and stop.is_set():
                    return
                session.sock.sendall(b''.join(
                    session.request(READ, uuid.uuid4().bytes,
                                    os.urandom(32), length=4096,
                                    request=random.getrandbits(64))
                    for _ in range(BURST)))
                for _ in range(BURST):
                    statuses.append(session.reply()[0])


def start(port, held, refused, statuses):
    """The flood once, its three parts at once, each in a thread started
    here; the threads. The sockets it holds go to ``held`` (the caller
    closes them), as :func:`idle`, :func:`write_headers` and
    :func:`random_grants` say."""
    threads = [threading.Thread(target=idle, args=(port, held, refused)),
               threading.Thread(target=write_headers, args=(port, held)),
               threading.Thread(target=random_grants, args=(port, statuses))]
    for thread in threads:
        thread.start()
    return threads


def lines(path):
    """The number of lines of the file at ``path`` (a log)."""
    with open(path, 'rb') as f:
        return f.read().count(b'\n')


class Sampler(threading.Thread):
    """Peaks of a process's threads and resident memory, sampled until
    stopped."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.threads = 0
        self.rss_kb = 0
        self.stopping = threading.Event()

    def status(self):
        """(threads, VmRSS in KiB) of the process now."""
        with open('/proc/%d/status' % self.pid) as f:
            fields = dict(line.split(':', 1) for line in f)
        return (int(fields['Threads']), int(fields['VmRSS'].split()[0]))

    def run(self):
        while not self.stopping.is_set():
            threads, rss = self.status()
            self.threads = max(self.threads, threads)
            self.rss_kb = max(self.rss_kb, rss)
            self.stopping.wait(0.02)


def _closed(sock):
    """Whether the donor has closed ``sock`` (non-blocking), which poll
    found readable: what it sent before (a reply, an ERROR) is read and
    dropped."""
    try:
        return not sock.recv(65536)
    except BlockingIOError:
        return False
    except OSError:
        return True     # reset


def _hold(part, stop, counts, name, ready):
    """Open ``part``'s connections, hold them until the donor has closed
    every one (the idle ones at [swapd] idle_timeout, the WRITE headers' at
    read_timeout, those over a cap at once) or ``stop`` is set, close them;
    again until ``stop``. ``ready`` is set once the first set is open."""
    while not stop.is_set():
        held, refused = [], []
        part(held, refused)
        ready.set()
        counts[name] += len(held)
        counts['failed connects'] += len(refused)
        try:
            # select() takes no descriptor above 1023: poll.
            poller = select.poll()
            socks = {sock.fileno(): sock for sock in held}
            for fd, sock in socks.items():
                sock.setblocking(False)
                poller.register(fd, select.POLLIN)
            while socks and not stop.is_set():
                for fd, _ in poller.poll(POLL_S * 1000):
                    if _closed(socks[fd]):
                        poller.unregister(fd)
                        del socks[fd]
        finally:
            for sock in held:
                sock.close()


def _frames(port, stop, counts, ready):
    """RANDOM_FRAMES frames of random grants, again until ``stop``."""
    ready.set()
    while not stop.is_set():
        statuses = []
        try:
            random_grants(port, statuses, stop=stop)
        finally:
            counts['frames'] += len(statuses)
            counts.update('status %d' % s for s in statuses)


def _run_part(target, args, ready, errors):
    try:
        target(*args, ready)
    except Exception as exc:
        # A part that stopped leaves a weaker flood: the caller says so.
        errors.append('%s: %r' % (target.__name__, exc))
    finally:
        ready.set()


def _sustain(port, up, stop, results):
    """The flood's process: every part again and again until ``stop``, or
    until its parent is gone; ``up`` set once each part has started (the
    first sets of connections open), (counts, errors) sent on ``results``
    at the end."""
    # The flood stands for other hosts: on this one it takes the CPU only
    # when fio and the two memagg-swapd leave some.
    os.nice(19)

    def orphaned():
        multiprocessing.connection.wait(
            [multiprocessing.parent_process().sentinel])
        stop.set()

    threading.Thread(target=orphaned, daemon=True).start()
    # A Counter per part: a part's counts are its thread's alone.
    counts = [collections.Counter() for _ in range(3)]
    parts = [
        (_hold, (lambda held, refused: idle(port, held, refused), stop,
                 counts[0], 'idle connections')),
        (_hold, (lambda held, refused: write_headers(port, held), stop,
                 counts[1], 'WRITE header connections')),
        (_frames, (port, stop, counts[2]))]
    errors, ready = [], [threading.Event() for _ in parts]
    threads = [threading.Thread(target=_run_part,
                                args=(target, args, event, errors))
               for (target, args), event in zip(parts, ready)]
    for thread in threads:
        thread.start()
    for event in ready:
        event.wait()
    up.set()
    for thread in threads:
        thread.join()
    results.send((dict(sum(counts, collections.Counter())), errors))
    results.close()


class Flood:
    """The flood on ``port`` kept up from :meth:`start` to :meth:`stop`,
    each part sent again once the donor is done with it, in a process of
    its own at the lowest CPU priority (its threads and the GIL stay out of
    the caller's way).  Call :func:`raise_descriptor_limit` first."""

    def __init__(self, port):
        self.port = port
        self._context = multiprocessing.get_context('spawn')
        self._process = None

    def start(self, timeout=30):
        """Start the flood; return once each of its parts has started.
        Raises RuntimeError, its process gone, when it has not by
        ``timeout`` s."""
        self._up = self._context.Event()
        self._stop = self._context.Event()
        self._results, child_end = self._context.Pipe(duplex=False)
        self._process = self._context.Process(
            target=_sustain, args=(self.port, self._up, self._stop,
                                   child_end), daemon=True)
        self._process.start()
        child_end.close()
        if not self._up.wait(timeout):
            self._process.kill()
            self._process.join()
            self._results.close()
            raise RuntimeError('the flood did not start within %d s'
                               % timeout)

    def stop(self, timeout=60):
        """Stop the flood, its connections closed; the counts of what it
        sent ({what: count}: connections held, connects that failed, frames
        and their replies' statuses; counts of 0 left out). Raises
        RuntimeError when a part of it failed or its process ended without
        its counts."""
        self._stop.set()
        outcome = None
        try:
            if self._results.poll(timeout):
                outcome = self._results.recv()
        except EOFError:
            pass        # the process died: reported below
        finally:
            self._results.close()
            self._process.join(timeout)
            if self._process.is_alive():
                self._process.kill()
                self._process.join()
        if outcome is None:
            raise RuntimeError('the flood process ended with %s and no '
                               'counts' % self._process.exitcode)
        counts, errors = outcome
        if errors:
            raise RuntimeError('the flood failed: %s' % '; '.join(errors))
        return counts
