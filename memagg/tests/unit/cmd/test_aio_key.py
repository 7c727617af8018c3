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

"""memagg-aio's key for the grants' secrets (memagg/cmd/aio.py): made
under its state directory on the first run, kept and checked after."""
import os

import pytest

from memagg.cmd import aio
from memagg.db import secret_box


def test_the_first_run_makes_a_0600_key_the_next_keeps_it(tmp_path):
    path = aio.state_key_file(str(tmp_path))
    key = secret_box.load_key(path)

    assert path == str(tmp_path / 'secret.key')
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert aio.state_key_file(str(tmp_path)) == path
    assert secret_box.load_key(path) == key


def test_a_state_dir_key_made_open_is_refused(tmp_path):
    path = aio.state_key_file(str(tmp_path))
    os.chmod(path, 0o644)

    with pytest.raises(secret_box.KeyFileError) as error:
        aio.state_key_file(str(tmp_path))
    assert str(error.value).startswith(
        "[database] secret_key_file (memagg-aio's) %s is open to group or "
        "others (mode 0644); run \"chmod 600 %s\"" % (path, path))
