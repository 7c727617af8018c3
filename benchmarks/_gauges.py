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

"""Gauges a benchmark reads while it loads memagg: a process's CPU time
and resident memory (/proc), a RabbitMQ queue's depth (rabbitmqctl)."""
import os
import subprocess


def cpu_seconds(pid):
    """utime + stime of a process (all its threads), in seconds."""
    with open('/proc/%d/stat' % pid) as f:
        # The command name may hold spaces and parentheses: fields are
        # counted from the last ')'.
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def rss_mb(pid):
    """The process's resident memory (VmRSS), MiB; 0 once it has none (a
    zombie)."""
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024.0
    return 0.0


def queue_depth(vhost, queue):
    """(ready, unacknowledged) messages of ``queue``, from rabbitmqctl."""
    out = subprocess.run(
        ['rabbitmqctl', '-q', 'list_queues', '-p', vhost, 'name',
         'messages_ready', 'messages_unacknowledged'],
        capture_output=True, text=True, timeout=60).stdout
    for line in out.splitlines():
        cols = line.split()
        if cols and cols[0] == queue:
            return int(cols[1]), int(cols[2])
    return 0, 0
