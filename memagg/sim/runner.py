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

"""Runs memagg-sim's memory bases over one trace, side by side in forked
processes when more than one core is there (the bases are independent;
the trace's arrays are shared with the children by fork, not copied), and
reports their joint progress."""
import multiprocessing
from multiprocessing import connection
import os
import traceback


def default_jobs():
    """Processes to use: one per basis, at most the cores there are."""
    return max(1, min(2, os.cpu_count() or 1))


def _child(sim, counter, pipe):
    def progress(done):
        counter.value = done
    try:
        pipe.send(('ok', sim.run(progress)))
    except BaseException:
        pipe.send(('error', traceback.format_exc()))
    finally:
        pipe.close()


def run(simulations, jobs, progress):
    """Run ``simulations`` (basis -> engine.Simulation); basis -> Result.

    ``progress`` (memagg.sim.progress.Progress) counts steps over all
    bases. Raises RuntimeError with the child's traceback if one fails.
    """
    if jobs <= 1 or len(simulations) == 1:
        results, before = {}, 0
        for basis, sim in simulations.items():
            results[basis] = sim.run(
                lambda done, before=before: progress.update(before + done))
            before += sim.trace.steps
        progress.close()
        return results

    context = multiprocessing.get_context('fork')
    children = {}
    for basis, sim in simulations.items():
        counter = context.RawValue('q', 0)
        receive, send = context.Pipe(duplex=False)
        process = context.Process(target=_child, args=(sim, counter, send),
                                  name='memagg-sim-%s' % basis, daemon=True)
        process.start()
        send.close()
        children[basis] = (process, counter, receive)
    results, errors = {}, []
    waiting = {receive: basis for basis, (_, _, receive) in children.items()}
    while waiting:
        for ready in connection.wait(list(waiting), timeout=0.2):
            basis = waiting.pop(ready)
            try:
                status, value = ready.recv()
            except EOFError:
                status, value = 'error', 'the process ended without a result'
            if status == 'ok':
                results[basis] = value
            else:
                errors.append('basis %s: %s' % (basis, value))
        progress.update(sum(counter.value
                            for _, counter, _ in children.values()))
    for process, _, _ in children.values():
        process.join()
    progress.close()
    if errors:
        raise RuntimeError('\n'.join(errors))
    return results
