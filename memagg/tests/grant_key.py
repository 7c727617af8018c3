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

"""The grant secret key file ([database] secret_key_file) the tests use,
and the services they start with a config file share."""
import atexit
import os
import shutil
import tempfile

from memagg.db import secret_box

_path = None


def path():
    """This test process's key file (0600), made on first use and removed
    at exit."""
    global _path
    if _path is None:
        directory = tempfile.mkdtemp(prefix='memagg-grant-key-')
        atexit.register(shutil.rmtree, directory, True)
        _path = os.path.join(directory, 'secret.key')
        secret_box.create_key_file(_path)
    return _path
