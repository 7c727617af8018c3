"""The native sampler's C tests, plain and under ASan + UBSan, and its
libFuzzer harnesses, built and run through native/Makefile."""
import os
import pathlib
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


@pytest.mark.slow
def test_c_suite(tmp_path):
    _require('gcc')
    out = _make(tmp_path, 'test')
    assert ' passed, 0 failed' in out


@pytest.mark.slow
def test_c_suite_under_asan_and_ubsan(tmp_path):
    _require('gcc')
    out = _make(tmp_path, 'asan')
    assert ' passed, 0 failed' in out
    assert 'runtime error' not in out


@pytest.mark.slow
def test_fuzz_harnesses(tmp_path):
    _require('clang')
    out = _make(tmp_path, 'fuzz', FUZZ_RUNS='20000')
    harnesses = sorted(p.stem for p in (NATIVE / 'fuzz').glob('fuzz_*.c'))
    assert harnesses
    for name in harnesses:
        assert f'== {tmp_path}/fuzz/{name}' in out
    assert out.count('Done 20000 runs') == len(harnesses)
