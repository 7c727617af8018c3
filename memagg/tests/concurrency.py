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

"""Requests fired at once, for the tests of state changes: of concurrent
callers, one only may take effect."""
import concurrent.futures
import threading

#: Callers released together.
CALLERS = 8


def at_once(func, callers=CALLERS, timeout=120):
    """``func()`` called from ``callers`` threads released together (a
    barrier); their results, in no particular order. A call that raises
    raises here."""
    start = threading.Barrier(callers)

    def call():
        start.wait(30)
        return func()
    with concurrent.futures.ThreadPoolExecutor(callers) as pool:
        futures = [pool.submit(call) for _ in range(callers)]
        return [f.result(timeout) for f in futures]
