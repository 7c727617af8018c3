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

"""Reading memagg-sim's trace and hosts CSV files: what a good file gives,
and every error naming the file, line and field."""
import numpy as np
import pytest

from memagg.sim import trace as sim_trace

HEADER = 'time,vm,booked_mb,vcpus,cpu,wss_mb,host\n'


def _write(tmp_path, text, name='trace.csv'):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_reads_rows_in_any_order_onto_the_time_grid(tmp_path):
    path = _write(tmp_path, HEADER + (
        '600,b,2048,1,0.25,700,\n'
        '0,a,4096,2,1.5,1000,h1\n'
        '300,a,4096,2,0.5,1100,elsewhere\n'
        '300,b,2048,1,0.75,600,h2\n'))

    trace = sim_trace.read_trace(path)

    assert (trace.step_s, trace.start_s, trace.steps) == (300.0, 0.0, 3)
    assert trace.vm_ids == ['b', 'a']
    assert trace.booked_mb.tolist() == [2048, 4096]
    assert trace.vcpus.tolist() == [1, 2]
    assert trace.first.tolist() == [1, 0]
    assert trace.last.tolist() == [2, 1]
    # Only a VM's first row says where it starts; hosts in the order of
    # their VMs' first times.
    assert trace.host_names == ['h1', 'h2']
    assert trace.initial_host.tolist() == [1, 0]
    np.testing.assert_array_equal(
        trace.cpu, [[0, 1.5], [0.75, 0.5], [0.25, 0]])
    np.testing.assert_array_equal(
        trace.wss_mb, [[0, 1000], [600, 1100], [700, 0]])


def test_host_column_is_optional(tmp_path):
    path = _write(tmp_path, 'vm,time,cpu,wss_mb,booked_mb,vcpus\n'
                            'a,10,1,5,8,1\na,20,0,6,8,1\n')

    trace = sim_trace.read_trace(path)

    assert trace.initial_host.tolist() == [-1]
    assert (trace.start_s, trace.step_s) == (10.0, 10.0)


def test_written_trace_reads_back(tmp_path):
    path = _write(tmp_path, HEADER + '0,a,4096,2,1.5,1000,h1\n'
                                     '60,a,4096,2,0.5,1100,\n'
                                     '60,b,512,1,0,20,\n')
    trace = sim_trace.read_trace(path)
    copy = tmp_path / 'copy.csv'

    sim_trace.write_trace(trace, copy)
    again = sim_trace.read_trace(copy)

    assert again.vm_ids == trace.vm_ids
    assert again.host_names == ['h1']
    np.testing.assert_array_equal(again.cpu, trace.cpu)
    np.testing.assert_array_equal(again.wss_mb, trace.wss_mb)
    np.testing.assert_array_equal(again.initial_host, trace.initial_host)


GOOD = '0,a,4096,2,1,1000,h1\n'


@pytest.mark.parametrize('rows, line, message', [
    ('0,a,4096,2,1,x,h1\n', 3,
     "field wss_mb: must be a number between 0 and booked_mb (4096), "
     "got 'x'"),
    ('0,a,4096,2,1,5000,h1\n', 3,
     "field wss_mb: must be a number between 0 and booked_mb (4096), "
     "got '5000'"),
    ('0,a,4096,2,3,10,h1\n', 3,
     "field cpu: must be a number between 0 and vcpus (2), got '3'"),
    ('0,a,4096,2,-1,10,h1\n', 3,
     "field cpu: must be a number between 0 and vcpus (2), got '-1'"),
    ('-5,a,4096,2,1,10,h1\n', 3, "field time: must be a number >= 0, "
                                 "got '-5'"),
    ('0,a,0,2,1,0,h1\n', 3, "field booked_mb: must be a number > 0, "
                            "got '0'"),
    ('0,a,4096,1.5,1,10,h1\n', 3, "field vcpus: must be an integer >= 1, "
                                  "got '1.5'"),
    ('0,a,4096,2,nan,10,h1\n', 3,
     "field cpu: must be a number between 0 and vcpus (2), got 'nan'"),
    ('0, ,4096,2,1,10,h1\n', 3, 'field vm: must name the VM'),
    ('0,a,4096,2,1\n', 3, '5 fields where the header names 7'),
    ('300,a,2048,2,1,10,\n', 3,
     'field booked_mb: vm a has 2048 here but 4096 on line 2; it must be '
     'the same on every row'),
    # Of several wrong values, the first in the columns' order.
    ('-1,a,4096,0,1,10,h1\n', 3, "field time: must be a number >= 0, "
                                 "got '-1'"),
    ('300,a,2048,2,9,10,\n', 3,
     'field booked_mb: vm a has 2048 here but 4096 on line 2'),
    ('0,a,4096,2,inf,10,h1\n', 3,
     "field cpu: must be a number between 0 and vcpus (2), got 'inf'"),
    ('0,a,4096,2,1,10,\n300,a,4096,2,1,10,\n', 3,
     'field time: a second row for vm a at time 0 (the first is line 2)'),
    ('900,a,4096,2,1,10,\n300,a,4096,2,1,10,\n', 3,
     'field time: vm a has no row at time 600 (before this one)'),
    ('300,a,4096,2,1,10,\n700,b,4096,2,1,10,\n', 4,
     "field time: 700 is not on the trace's grid of 300 s steps from 0"),
])
def test_row_errors_name_line_and_field(tmp_path, rows, line, message):
    path = _write(tmp_path, HEADER + GOOD + rows)

    with pytest.raises(sim_trace.TraceError) as error:
        sim_trace.read_trace(path)

    assert str(error.value).startswith('%s:%d: %s' % (path, line, message))
    assert error.value.line == line


@pytest.mark.parametrize('text, message', [
    ('', ':1: empty file; the first line must name the columns time, vm'),
    ('time,vm,booked_mb,vcpus,cpu\n', ':1: field wss_mb: missing column'),
    (HEADER.replace('host', 'hots'), ':1: field hots: unknown column; the '
                                     'columns are time, vm'),
    ('time,vm,vm,booked_mb,vcpus,cpu,wss_mb\n', ':1: field vm: named twice'),
    (HEADER, ': no rows; add one row per VM per time step'),
    (HEADER + GOOD, ':2: field time: the trace needs at least two distinct '
                    'times to know its step'),
])
def test_file_errors(tmp_path, text, message):
    path = _write(tmp_path, text)

    with pytest.raises(sim_trace.TraceError) as error:
        sim_trace.read_trace(path)

    assert str(error.value).startswith(str(path) + message)


def test_missing_file_says_why(tmp_path):
    with pytest.raises(sim_trace.TraceError) as error:
        sim_trace.read_trace(tmp_path / 'nope.csv')

    assert str(error.value) == '%s: cannot read: No such file or directory' % (
        tmp_path / 'nope.csv')


def test_hosts_file(tmp_path):
    path = _write(tmp_path, 'memory_mb,host,cpus\n1024,a,4\n2048.5,b,8\n',
                  'hosts.csv')

    hosts = sim_trace.read_hosts(path)

    assert hosts.names == ['a', 'b']
    assert hosts.cpus.tolist() == [4, 8]
    assert hosts.memory_mb.tolist() == [1024, 2048.5]


@pytest.mark.parametrize('rows, message', [
    ('a,0,10\n', ":2: field cpus: must be a number > 0, got '0'"),
    ('a,4,big\n', ":2: field memory_mb: must be a number > 0, got 'big'"),
    ('a,4,10\na,4,10\n', ":3: field host: host 'a' is already on line 2"),
    ('', ': no hosts; add one row per host after the header'),
])
def test_hosts_file_errors(tmp_path, rows, message):
    path = _write(tmp_path, 'host,cpus,memory_mb\n' + rows, 'hosts.csv')

    with pytest.raises(sim_trace.TraceError) as error:
        sim_trace.read_hosts(path)

    assert str(error.value).startswith(str(path) + message)


def test_trace_host_missing_from_hosts_file_names_its_line(tmp_path):
    path = _write(tmp_path, HEADER + GOOD + '0,b,4096,2,1,10,h9\n'
                                            '300,b,4096,2,1,10,\n')
    trace = sim_trace.read_trace(path)
    hosts = sim_trace.make_hosts(None, 4, 1024, ['h1', 'h2'])

    with pytest.raises(sim_trace.TraceError) as error:
        sim_trace.initial_hosts(trace, hosts, 'hosts.csv')

    assert str(error.value) == (
        "%s:3: field host: unknown host 'h9'; hosts.csv names h1, h2"
        % path)


def test_make_hosts_puts_named_hosts_first():
    hosts = sim_trace.make_hosts(4, 8, 1024, ['host-0001', 'x'])

    assert hosts.names == ['host-0001', 'x', 'host-0000', 'host-0002']
    assert hosts.cpus.tolist() == [8] * 4
    with pytest.raises(ValueError, match='names 2 hosts, more than the 1'):
        sim_trace.make_hosts(1, 8, 1024, ['a', 'b'])
