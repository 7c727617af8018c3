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

"""Wrapping grant secrets (memagg/db/secret_box.py) and the checks on
the key file."""
import base64
import os

import pytest

from memagg.db import secret_box

GRANT = '6b1d6c3e-0000-4000-8000-000000000001'
OTHER = '6b1d6c3e-0000-4000-8000-000000000002'
SECRET = 'ab' * 32


@pytest.fixture
def key_file(tmp_path, conf):
    """A new key file that [database] secret_key_file names; its path."""
    path = str(tmp_path / 'secret.key')
    secret_box.create_key_file(path)
    conf.config(secret_key_file=path, group='database')
    return path


def test_a_new_key_file_is_0600_and_holds_64_hex_digits(key_file):
    assert os.stat(key_file).st_mode & 0o777 == 0o600
    with open(key_file) as f:
        text = f.read()
    assert len(text.strip()) == 64 and int(text, 16) >= 0


def test_a_wrapped_secret_opens_and_never_shows_the_clear_one(key_file):
    stored = secret_box.wrap(SECRET, GRANT)

    assert SECRET not in stored
    assert stored.startswith('v1:%s:' % secret_box.current_key().key_id)
    assert len(stored) <= 255
    assert secret_box.unwrap(stored, GRANT) == SECRET
    # A random nonce per value: the same secret never looks the same.
    assert secret_box.wrap(SECRET, GRANT) != stored


def test_a_value_moved_to_another_grant_does_not_open(key_file):
    stored = secret_box.wrap(SECRET, GRANT)

    with pytest.raises(secret_box.SecretUnavailable,
                       match="altered or belongs to another grant"):
        secret_box.unwrap(stored, OTHER)


def _flip(stored, index):
    """``stored`` with byte ``index`` of its nonce and ciphertext flipped."""
    head, body = stored.rsplit(':', 1)
    raw = bytearray(base64.urlsafe_b64decode(body + '=' * (-len(body) % 4)))
    raw[index] ^= 0x01
    return '%s:%s' % (head, base64.urlsafe_b64encode(raw).decode().rstrip(
        '='))


@pytest.mark.parametrize('index', [0, 11, 12, 40, -1])
def test_an_altered_value_does_not_open(key_file, index):
    """Nonce (0, 11), ciphertext (12, 40) or tag (-1)."""
    altered = _flip(secret_box.wrap(SECRET, GRANT), index)

    with pytest.raises(secret_box.SecretUnavailable, match='altered'):
        secret_box.unwrap(altered, GRANT)


def test_a_truncated_value_does_not_open(key_file):
    stored = secret_box.wrap(SECRET, GRANT)

    with pytest.raises(secret_box.SecretUnavailable, match='altered'):
        secret_box.unwrap(stored[:20], GRANT)


def test_a_clear_legacy_value_is_refused_naming_the_command(key_file):
    with pytest.raises(secret_box.ClearSecret,
                       match='memagg-manage grant_secrets rewrap'):
        secret_box.unwrap(SECRET, GRANT)


def test_a_value_under_another_key_names_it_and_the_fix(key_file, tmp_path):
    old = secret_box.create_key_file(str(tmp_path / 'old.key'))
    stored = secret_box.wrap(SECRET, GRANT, old)

    with pytest.raises(secret_box.SecretUnavailable) as error:
        secret_box.unwrap(stored, GRANT)
    assert old.key_id in str(error.value)
    assert '--old-key-file' in str(error.value)
    assert secret_box.unwrap(stored, GRANT,
                             [secret_box.current_key(), old]) == SECRET


def test_a_missing_key_file_is_refused_with_the_fix(conf, tmp_path):
    path = str(tmp_path / 'absent.key')
    conf.config(secret_key_file=path, group='database')

    with pytest.raises(secret_box.KeyFileError) as error:
        secret_box.wrap(SECRET, GRANT)
    message = str(error.value)
    assert message.startswith('[database] secret_key_file %s does not '
                              'exist' % path)
    assert 'openssl rand -hex 32' in message


@pytest.mark.parametrize('mode', [0o640, 0o604, 0o660, 0o644])
def test_a_key_file_group_or_others_can_read_is_refused(key_file, mode):
    os.chmod(key_file, mode)

    with pytest.raises(secret_box.KeyFileError) as error:
        secret_box.wrap(SECRET, GRANT)
    assert str(error.value) == (
        '[database] secret_key_file %s is open to group or others (mode '
        '%04o); run "chmod 600 %s" (and chown it to the user memagg runs '
        'as)' % (key_file, mode, key_file))


@pytest.mark.parametrize('content', [b'', b'00' * 31, b'x' * 31,
                                     b'zz' * 32, b'0' * 65])
def test_a_key_file_without_a_256_bit_key_is_refused(conf, tmp_path,
                                                     content):
    path = tmp_path / 'secret.key'
    path.write_bytes(content)
    path.chmod(0o600)
    conf.config(secret_key_file=str(path), group='database')

    with pytest.raises(secret_box.KeyFileError,
                       match='does not hold a 256-bit key .* 32 random '
                             'bytes, raw or as 64 hexadecimal digits'):
        secret_box.current_key()


def test_a_raw_32_byte_key_file_is_taken(conf, tmp_path):
    path = tmp_path / 'secret.key'
    path.write_bytes(os.urandom(32))
    path.chmod(0o400)
    conf.config(secret_key_file=str(path), group='database')

    assert secret_box.unwrap(secret_box.wrap(SECRET, GRANT), GRANT) == SECRET


def test_a_key_file_replaced_is_read_again(key_file):
    before = secret_box.current_key()
    os.unlink(key_file)
    after = secret_box.create_key_file(key_file)

    assert secret_box.current_key() == after != before


def test_a_key_file_opened_later_is_checked_again(key_file):
    secret_box.current_key()
    os.chmod(key_file, 0o644)

    with pytest.raises(secret_box.KeyFileError, match='chmod 600'):
        secret_box.current_key()
