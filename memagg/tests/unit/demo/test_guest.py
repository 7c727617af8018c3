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

"""What a guest's console says when it did not boot: its last lines, or
after a kernel panic the panic's own lines, never a call trace's frames."""
from memagg.demo import guest

PANIC_IN_A_WORKQUEUE = """\
[    0.93] virtio_blk virtio1: [vda] 8192 512-byte logical blocks
[    0.96] Kernel panic - not syncing: System is deadlocked on memory
[    0.96] CPU: 0 PID: 9 Comm: kworker/u2:0 Not tainted 6.1.0-57-cloud-amd64
[    0.96] Hardware name: QEMU Standard PC (i440FX + PIIX, 1996)
[    0.96] Workqueue: eval_map_wq tracer_init_tracefs_work_func
[    0.96] Call Trace:
[    0.96]  <TASK>
[    0.96]  dump_stack_lvl+0x44/0x5c
[    0.96]  ? btf_check_all_metas+0x1c4/0x290
[    0.96]  </TASK>
[    0.97] Kernel Offset: 0x31a00000 from 0xffffffff81000000
"""


class _Console(guest.Guest):
    """A guest of which only the console is read."""

    def __init__(self, text):
        self.text = text

    def console_text(self):
        return self.text


def test_after_a_panic_the_tail_starts_at_the_panic():
    assert _Console(PANIC_IN_A_WORKQUEUE).console_tail() == [
        '[    0.96] Kernel panic - not syncing: System is deadlocked on '
        'memory',
        '[    0.96] CPU: 0 PID: 9 Comm: kworker/u2:0 Not tainted '
        '6.1.0-57-cloud-amd64',
        '[    0.96] Hardware name: QEMU Standard PC (i440FX + PIIX, 1996)',
        '[    0.96] Workqueue: eval_map_wq tracer_init_tracefs_work_func',
        '[    0.96] Call Trace:']


def test_without_a_panic_the_tail_is_the_last_lines_without_frames():
    text = PANIC_IN_A_WORKQUEUE.replace('Kernel panic - not syncing: ', '')
    assert _Console(text).console_tail(3) == [
        '[    0.96] Workqueue: eval_map_wq tracer_init_tracefs_work_func',
        '[    0.96] Call Trace:',
        '[    0.97] Kernel Offset: 0x31a00000 from 0xffffffff81000000']
    assert _Console('').console_tail() == []
