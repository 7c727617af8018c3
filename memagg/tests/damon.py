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

"""DAMON's sysfs tree as tests read it: memagg's kdamonds apart from those
of the host's other DAMON users, which memagg keeps running beside its own
(native/src/damon_share.c)."""
import errno
import os

from memagg.tests import polling

ADMIN = '/sys/kernel/mm/damon/admin'
KDAMONDS = ADMIN + '/kdamonds'
# memagg's set-ups, and no monitoring tool's, update every hour (AGGR_US).
MEMAGG_UPDATE_US = 3600000000
UPDATE_US = 'contexts/0/monitoring_attrs/intervals/update_us'


def read_busy(path, timeout=30):
    """The text of DAMON sysfs file ``path``, read again while DAMON
    answers EBUSY: a kdamond's state and pid do while any DAMON command
    runs, another user's too (this machine's platform sends one every few
    seconds to its kdamond 0), which is no answer."""
    def attempt():
        try:
            with open(path) as f:
                return (f.read(),)
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                raise
            return None
    return polling.wait_for(attempt, timeout, interval=0.005,
                            message='%s to answer other than EBUSY'
                            % path)[0]


def read(rel):
    """The stripped text of KDAMONDS/rel."""
    return read_busy(os.path.join(KDAMONDS, rel)).strip()


def _indices():
    try:
        return range(int(read('nr_kdamonds')))
    except (OSError, ValueError):
        return range(0)


def _running(i):
    try:
        return read('%d/state' % i) == 'on'
    except OSError:
        return False  # the tree was recreated while it was read


def _is_memagg(i):
    try:
        return int(read('%d/%s' % (i, UPDATE_US))) >= MEMAGG_UPDATE_US
    except (OSError, ValueError):
        return False


def memagg_running():
    """Indices of memagg's running kdamonds."""
    return [i for i in _indices() if _running(i) and _is_memagg(i)]


def others():
    """Set-ups of other DAMON users' kdamonds, by index: whether each runs,
    its operations, intervals and regions."""
    found = {}
    for i in _indices():
        try:
            if read('%d/contexts/nr_contexts' % i) == '0' or _is_memagg(i):
                continue
            ctx = '%d/contexts/0/' % i
            regions = ctx + 'targets/0/regions/'
            found[i] = {
                'state': read('%d/state' % i),
                'operations': read(ctx + 'operations'),
                'intervals': [read(ctx + 'monitoring_attrs/intervals/' + f)
                              for f in ('sample_us', 'aggr_us', 'update_us')],
                'regions': [(read(regions + '%d/start' % r),
                             read(regions + '%d/end' % r))
                            for r in range(int(read(regions + 'nr_regions')))]
                if read(ctx + 'targets/nr_targets') != '0' else [],
            }
        except OSError:
            continue
    return found
