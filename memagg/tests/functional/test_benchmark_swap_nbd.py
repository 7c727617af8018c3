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

"""benchmarks/swap_nbd_fio.py as CI runs it: --quick, every server (two real
memagg-swapd processes, nbdkit, qemu-nbd, nbdkit relaying to nbdkit) under
real fio.  The figures are not asserted (they depend on the machine), only
that each server ran every cell and moved data, and that memagg's reads
went to its donor."""
import pytest

from memagg.tests.functional import benchmark_script

pytestmark = [pytest.mark.functional]

SCRIPT = 'swap_nbd_fio.py'
SERVERS = ['memagg', 'nbdkit', 'qemu-nbd', 'nbdkit-relay']
CELLS = [('randread', '1'), ('randread', '32'), ('randwrite', '1'),
         ('randwrite', '32')]


@pytest.mark.slow
def test_quick_run_has_every_server_and_cell():
    run = benchmark_script.run(SCRIPT, '--quick')

    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    header = next(line for line in lines if line.startswith('workload'))
    assert [col.strip() for col in header.split('|')[1:5]] == SERVERS
    rows = {tuple(line.split('|')[0].split()): line.split('|')
            for line in lines
            if line.split('|')[0].split()[:1] in (['randread'],
                                                  ['randwrite'])}
    assert sorted(rows) == sorted(CELLS)
    for cell, columns in rows.items():
        for server, column in zip(SERVERS, columns[1:5]):
            iops = float(column.split()[0])
            assert iops > 0, (cell, server, run.stdout)
    assert any(line.startswith('verdict: ') for line in lines), run.stdout
    # The figures are memagg's remote path only if every read reached the
    # donor: the prefill wrote every page and no slab fell back locally.
    stats = dict(item.split('=', 1) for item in next(
        line for line in lines
        if line.startswith('memagg export after the run: ')).split()[5:])
    assert int(stats['reads']) > 0, stats
    for key in ('zero_reads', 'local_reads', 'remote_errors',
                'degraded_slabs'):
        assert stats[key] == '0', stats
    assert 'WARNING' not in run.stdout


def test_bad_size_is_one_line_and_exit_2():
    run = benchmark_script.run(SCRIPT, '--size-mb', '100', timeout=60)

    benchmark_script.assert_refused(
        run, 'error: --size-mb: must be a positive multiple of 64 (the '
        'slab size), got 100')
