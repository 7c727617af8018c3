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

"""The native C tests (the page sampler's and memagg-swapd's), plain and
under ASan + UBSan, and their libFuzzer harnesses, built and run through
native/Makefile."""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

NATIVE = pathlib.Path(__file__).resolve().parents[4] / 'native'
# Build on every core; -O keeps each target's output (a test run, a
# harness's report) whole.
JOBS = f'-j{os.cpu_count() or 1}'


def _make(tmp_path, *args, timeout=300, **env):
    proc = subprocess.run(
        ['make', '-C', str(NATIVE), f'OUT={tmp_path}', *args],
        capture_output=True, text=True, timeout=timeout,
        env={**os.environ, **env})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def _require(tool):
    if shutil.which(tool) is None:
        if os.environ.get('CI') == 'true':
            pytest.fail(f'{tool} is missing: tools/setup.sh installs it')
        pytest.skip(f'{tool} is not installed (tools/setup.sh installs it)')


def _assert_all_passed(out):
    """Every test program ran (each tests/test_*.c, the sampler's, and
    each swapd/tests/test_*.c) and none failed a check."""
    sampler_tests = sorted((NATIVE / 'tests').glob('test_*.c'))
    swapd_tests = sorted((NATIVE / 'swapd' / 'tests').glob('test_*.c'))
    assert sampler_tests and swapd_tests
    for test in sampler_tests + swapd_tests:
        assert '%s\n' % test.stem in out, test.name
    results = re.findall(r'^(\d+) passed, (\d+) failed$', out, re.M)
    assert len(results) == len(sampler_tests) + len(swapd_tests), out
    assert all(int(passed) > 0 and failed == '0'
               for passed, failed in results), out


@pytest.mark.slow
def test_c_suite(tmp_path):
    _require('gcc')
    _assert_all_passed(_make(tmp_path, JOBS, '-O', 'test'))


@pytest.mark.slow
def test_c_suite_under_asan_and_ubsan(tmp_path):
    _require('gcc')
    out = _make(tmp_path, JOBS, '-O', 'asan')
    _assert_all_passed(out)
    assert 'runtime error' not in out
    assert 'AddressSanitizer' not in out


@pytest.mark.slow
def test_fuzz_harnesses(tmp_path):
    """Every harness replays its kept crash inputs, then fuzzes from its
    in-tree corpus for 10^6 executions or 60 s, whichever comes first
    (issue 18: deep enough to count); two at once, CI having two cores."""
    _require('clang')
    # The harnesses build on every core, then fuzz two at a time.
    _make(tmp_path, JOBS, '-O', 'fuzz-build', timeout=600)
    out = _make(tmp_path, '-j2', '-O', 'fuzz', timeout=1800)
    harnesses = sorted(p.stem for p in (NATIVE / 'fuzz').glob('fuzz_*.c'))
    assert harnesses
    runs = {}
    for section in re.split(r'^== ', out, flags=re.M)[1:]:
        name = section.split('\n', 1)[0].rsplit('/', 1)[-1]
        done = re.search(r'^Done (\d+) runs in (\d+) second', section, re.M)
        assert done, section[-3000:]
        runs[name] = (int(done.group(1)), int(done.group(2)))
    assert sorted(runs) == harnesses, out[-3000:]
    shallow = {name: ran for name, ran in runs.items()
               if ran[0] < 10 ** 6 and ran[1] < 60}
    assert not shallow, shallow
    for name in harnesses:
        assert any((NATIVE / 'fuzz' / 'corpus' / name).iterdir()), name


def test_fuzz_regressions_name_a_harness():
    """A kept crash input sits under the name of the harness that found
    it, so that `make fuzz` replays it."""
    harnesses = {p.stem for p in (NATIVE / 'fuzz').glob('fuzz_*.c')}
    kept = NATIVE / 'fuzz' / 'regressions'
    names = {p.name for p in kept.iterdir()} if kept.is_dir() else set()
    assert names <= harnesses, names - harnesses
