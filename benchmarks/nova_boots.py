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

"""Benchmark: what memagg's filter and weigher cost Nova per boot.

Two runs in one process, in the harness of memagg/tests/nova_functional (a
real nova-api, conductor and scheduler, Placement, --hosts fake-driver
computes of 8 GiB, memagg's API on loopback with a report of every host).
The first boots --boots servers one after the other through Nova's API with
Nova's scheduler as shipped; the second the same with memagg's
RealMemoryFilter and RealMemoryWeigher enabled and [memagg] cache_ttl = 0,
so that every scheduling request reads memagg's API. Each boot is timed
from the API's request to Nova's instance.create.end notification. Prints
the time per boot of each, the ratio (target: at most 1.2), and the calls
the filter and weigher made to memagg's API against the scheduling requests
(target: one each).

Run: .venv/bin/python benchmarks/nova_boots.py [--hosts 100] [--boots 500]
"""
# Nova's harness must be imported first, in native threading mode.
from memagg.tests.nova_functional import threading_mode  # noqa: F401,I100

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import unittest  # noqa: E402

from memagg.nova import usage  # noqa: E402
from memagg.tests.nova_functional import harness  # noqa: E402

#: Flavor of every boot: 100 hosts of 8 GiB take 500 of them by booked and
#: by expected real memory alike.
FLAVOR_MB = 512
#: Seconds one boot may take.
BOOT_TIMEOUT = 120
RESULTS = {}


class _Boots(harness.MemaggNovaTestCase):
    """One run: ``hosts`` computes, ``boots`` servers."""

    hosts = boots = 0
    memagg_options = {'cache_ttl': 0}

    def setUp(self):
        super().setUp()
        self.flags(instances=-1, cores=-1, ram=-1, group='quota')

    def test_boots(self):
        names = ['bench-%03d' % i for i in range(self.hosts)]
        self.start_hosts(*names)
        for name in names:
            self.report(name, [])
        flavor = self.flavor(FLAVOR_MB)
        calls_before = self._api_calls()
        start = time.monotonic()
        for number in range(1, self.boots + 1):
            self._boot(flavor, number)
        elapsed = time.monotonic() - start
        RESULTS[self.memagg_filters] = (elapsed / self.boots,
                                        self._api_calls() - calls_before)

    def _boot(self, flavor, number):
        # Waits for Nova's own instance.create.end notification: polling
        # the API would take CPU from the boot it measures.
        self.api.post_server({'server': self._build_server(
            flavor_id=flavor, networks='none')})
        self.notifier.wait_for_versioned_notifications(
            'instance.create.end', n_events=number, timeout=BOOT_TIMEOUT)

    def _api_calls(self):
        cache = usage.shared() if self.memagg_filters else None
        return cache.api_calls if cache is not None else 0


class _Without(_Boots):
    memagg_filters = False


class _With(_Boots):
    memagg_filters = True


def _positive(text):
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError('must be a positive integer, got %s'
                                         % text)
    return value


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=_positive, default=100,
                        help='fake-driver computes (default 100)')
    parser.add_argument('--boots', type=_positive, default=500,
                        help='servers booted in each run (default 500)')
    args = parser.parse_args()
    for case in (_Without, _With):
        case.hosts, case.boots = args.hosts, args.boots
        result = unittest.TextTestRunner(stream=sys.stderr, verbosity=0).run(
            unittest.defaultTestLoader.loadTestsFromTestCase(case))
        if not result.wasSuccessful():
            return 1
    (without, _), (with_memagg, calls) = RESULTS[False], RESULTS[True]
    print('%d boots onto %d fake-driver hosts, one at a time'
          % (args.boots, args.hosts))
    print('  Nova as shipped:            %7.1f ms per boot' % (without * 1e3))
    print('  with memagg filter+weigher: %7.1f ms per boot'
          % (with_memagg * 1e3))
    print('  ratio: %.2fx (target <= 1.2x)' % (with_memagg / without))
    print('  memagg API calls: %d for %d scheduling requests (%.2f each; '
          'target 1)' % (calls, args.boots, calls / args.boots))
    return 0


if __name__ == '__main__':
    sys.exit(main())
