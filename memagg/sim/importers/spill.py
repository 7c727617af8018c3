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

"""Grouping the rows of files too big for memory by VM: a first pass
appends each row (already parsed) to one of N bucket files, chosen by a
hash of its VM, so that all of a VM's rows land in one bucket; the second
pass reads one bucket at a time and yields its VMs' rows.

Memory: the rows held for writing (flushed once they reach
``chunk_bytes`` of text) in the first pass, one bucket's rows in the
second. N is the input's size over ``chunk_bytes``, so a bucket holds about
``chunk_bytes`` of rows (more for a VM with more rows than that: a VM's
rows are never split).
"""
import json
import math
import os
import zlib


class Spill:
    """Bucket files in directory ``tmpdir`` for ``input_bytes`` of
    input."""

    def __init__(self, tmpdir, input_bytes, chunk_bytes):
        self.buckets = max(1, math.ceil(input_bytes / chunk_bytes))
        self.chunk_bytes = chunk_bytes
        self.paths = [os.path.join(tmpdir, 'bucket-%05d.jsonl' % i)
                      for i in range(self.buckets)]
        self._held = [[] for _ in range(self.buckets)]
        self._held_bytes = 0

    def add(self, vm, *values):
        """Keep the row ``values`` (JSON-able) of VM ``vm``."""
        text = json.dumps([vm] + list(values))
        bucket = zlib.crc32(vm.encode('utf-8')) % self.buckets
        self._held[bucket].append(text)
        self._held_bytes += len(text) + 1
        if self._held_bytes >= self.chunk_bytes:
            self.flush()

    def flush(self):
        """Append the rows held to their bucket files."""
        for path, held in zip(self.paths, self._held):
            if held:
                with open(path, 'a', encoding='utf-8') as stream:
                    stream.write('\n'.join(held) + '\n')
                held.clear()
        self._held_bytes = 0

    def groups(self, progress=None):
        """Yield ``(vm, rows)`` for each VM, bucket by bucket (each bucket
        file removed once read), VMs in the order their first row was
        added to the bucket; ``progress(done, total, 'buckets')`` after
        each bucket."""
        self.flush()
        for done, path in enumerate(self.paths, 1):
            rows = {}
            if os.path.exists(path):
                with open(path, encoding='utf-8') as stream:
                    for line in stream:
                        values = json.loads(line)
                        rows.setdefault(values[0], []).append(values[1:])
                os.unlink(path)
            for vm, vm_rows in rows.items():
                yield vm, vm_rows
            if progress:
                progress(done, self.buckets, 'buckets')
