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


def _make(tmp_path, *targets, **env):
    proc = subprocess.run(
        ['make', '-C', str(NATIVE), f'OUT={tmp_path}', *targets],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, **env})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def _require(tool):
    if shutil.which(tool) is None:
        if os.environ.get('CI') == 'true':
            pytest.fail(f'{tool} is missing: tools/setup.sh installs it')
        pytest.skip(f'{tool} is not installed (tools/setup.sh installs it)')


def _assert_all_passed(out):
    """Every test program ran (the sampler's and each swapd
    tests/test_*.c) and none failed a check."""
    swapd_tests = sorted((NATIVE / 'swapd' / 'tests').glob('test_*.c'))
    assert swapd_tests
    for test in swapd_tests:
        assert '%s\n' % test.stem in out, test.name
    results = re.findall(r'^(\d+) passed, (\d+) failed$', out, re.M)
    assert len(results) == 1 + len(swapd_tests), out
    assert all(int(passed) > 0 and failed == '0'
               for passed, failed in results), out


@pytest.mark.slow
def test_c_suite(tmp_path):
    _require('gcc')
    _assert_all_passed(_make(tmp_path, 'test'))


@pytest.mark.slow
def test_c_suite_under_asan_and_ubsan(tmp_path):
    _require('gcc')
    out = _make(tmp_path, 'asan')
    _assert_all_passed(out)
    assert 'runtime error' not in out
    assert 'AddressSanitizer' not in out


@pytest.mark.slow
def test_fuzz_harnesses(tmp_path):
    _require('clang')
    out = _make(tmp_path, 'fuzz', FUZZ_RUNS='20000')
    harnesses = sorted(p.stem for p in (NATIVE / 'fuzz').glob('fuzz_*.c'))
    assert harnesses
    for name in harnesses:
        assert f'== {tmp_path}/fuzz/{name}' in out
    assert out.count('Done 20000 runs') == len(harnesses)
