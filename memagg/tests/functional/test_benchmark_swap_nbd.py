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

"""benchmarks/swap_nbd_fio.py as CI runs it: --quick, every server (three
pairs of real memagg-swapd processes, one with its pages in clear, one with
them sealed, one lending over libfabric's tcp provider; nbdkit, qemu-nbd,
nbdkit relaying to nbdkit) under real fio.
The figures are not asserted (they depend on the machine), only that each
server ran every cell and moved data (the memagg servers start only when
EXPORT_DESCRIBE shows the export sealed or in clear as asked), that both
memagg exports' reads went to their donor, and that every target got a
verdict."""
import pytest

from memagg.tests.functional import benchmark_script

pytestmark = [pytest.mark.functional]

SCRIPT = 'swap_nbd_fio.py'
SERVERS = ['memagg', 'memagg-sealed', 'memagg-fabric', 'nbdkit', 'qemu-nbd',
           'nbdkit-relay']
MEMAGG = SERVERS[:3]
CELLS = [('randread', '1'), ('randread', '32'), ('randwrite', '1'),
         ('randwrite', '32')]


@pytest.mark.slow
def test_quick_run_has_every_server_and_cell():
    run = benchmark_script.run(SCRIPT, '--quick')

    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    header = next(line for line in lines if line.startswith('workload'))
    columns = [col.strip() for col in header.split('|')[1:]]
    assert columns[:len(SERVERS)] == SERVERS
    assert columns[len(SERVERS):len(SERVERS) + 2] == [
        'memagg-sealed / memagg', 'memagg-fabric / memagg']
    rows = {tuple(line.split('|')[0].split()): line.split('|')
            for line in lines
            if line.split('|')[0].split()[:1] in (['randread'],
                                                  ['randwrite'])}
    assert sorted(rows) == sorted(CELLS)
    for cell, columns in rows.items():
        for server, column in zip(SERVERS, columns[1:]):
            iops = float(column.split()[0])
            assert iops > 0, (cell, server, run.stdout)
    for variant in MEMAGG[1:]:
        assert any(line.startswith('verdict: %s target ' % variant)
                   for line in lines), run.stdout
    assert any(line.startswith('verdict: target ')
               for line in lines), run.stdout
    # The figures are memagg's remote path only if every read reached the
    # donor: the prefill wrote every page and no slab fell back locally.
    for server in MEMAGG:
        stats = dict(item.split('=', 1) for item in next(
            line for line in lines
            if line.startswith('%s export after the run: ' % server)
        ).split()[5:])
        assert int(stats['reads']) > 0, stats
        for key in ('zero_reads', 'local_reads', 'remote_errors',
                    'degraded_slabs', 'auth_failures'):
            assert stats[key] == '0', (server, stats)
    assert 'WARNING' not in run.stdout


def test_bad_size_is_one_line_and_exit_2():
    run = benchmark_script.run(SCRIPT, '--size-mb', '100', timeout=60)

    benchmark_script.assert_refused(
        run, 'error: --size-mb: must be a positive multiple of 64 (the '
        'slab size), got 100')
