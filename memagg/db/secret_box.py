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

"""Grant secrets at rest: wrapped with AES-256-GCM under the key in
[database] secret_key_file.

A stored value is ``v1:<key id>:<nonce and ciphertext, base64url>``: a
random 96-bit nonce per value, the grant's uuid as associated data (so a
value copied to another grant's row does not open), and the key id (8 hex
digits derived from the key) so that a rotation can tell the values under
the old key from those under the new one. A value without the ``v1:``
prefix is a clear secret from before wrapping: it is never returned (see
:class:`ClearSecret`); ``memagg-manage grant_secrets rewrap`` wraps it.
"""
import base64
import binascii
import collections
import hashlib
import os
import stat

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import aead

from memagg.common import exceptions
from memagg.conf import CONF

PREFIX = 'v1:'
KEY_ID_CHARS = 8
KEY_BYTES = 32
NONCE_BYTES = 12
OPTION = '[database] secret_key_file'
REWRAP = 'memagg-manage grant_secrets rewrap'

Key = collections.namedtuple('Key', 'key_id material')


class KeyFileError(exceptions.MemaggException):
    """The key file cannot be used; the message names the option and the
    fix."""

    msg_fmt = '%(option)s %(path)s %(problem)s'


class SecretUnavailable(exceptions.MemaggException):
    """A stored grant secret cannot be unwrapped with the keys given."""

    msg_fmt = "Grant %(grant)s's secret %(reason)s"


class ClearSecret(SecretUnavailable):
    """A grant secret stored in clear by a memagg from before wrapping."""

    def __init__(self, grant):
        super().__init__(grant=grant, reason=(
            'is stored in clear (from before secrets were wrapped); run "%s" '
            'to wrap every such secret' % REWRAP))


def _key_id(material):
    return hashlib.sha256(b'memagg grant secret key id\0'
                          + material).hexdigest()[:KEY_ID_CHARS]


def _parse(data):
    """The 32 key bytes of a key file's contents, or None."""
    if len(data) == KEY_BYTES:
        return data
    try:
        material = binascii.unhexlify(data.strip())
    except (binascii.Error, ValueError):
        return None
    return material if len(material) == KEY_BYTES else None


def load_key(path, option=OPTION):
    """The key in file ``path`` (``option`` names where the path came
    from, for the errors). Raises KeyFileError when the file is missing,
    readable or writable by group or others, or does not hold 32 bytes
    (raw or 64 hexadecimal digits)."""
    def fail(problem):
        return KeyFileError(option=option, path=path, problem=problem)

    if not path:
        raise KeyFileError(option=option, path='(empty)', problem=(
            'names no file; set it to a key file (create one with '
            '"(umask 077; openssl rand -hex 32 > /etc/memagg/secret.key)")'))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise fail('does not exist; create it with "(umask 077; openssl '
                   'rand -hex 32 > %s)" (the same key on every controller), '
                   'or point the option at the existing key file' % path)
    except OSError as error:
        raise fail('cannot be read (%s); make it readable by the user '
                   'memagg runs as' % error.strerror)
    with os.fdopen(fd, 'rb') as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise fail('is not a regular file; point the option at the key '
                       'file')
        # Checked on the open file, not the path: no window to swap it.
        if info.st_mode & 0o077:
            raise fail('is open to group or others (mode %04o); run "chmod '
                       '600 %s" (and chown it to the user memagg runs as)'
                       % (stat.S_IMODE(info.st_mode), path))
        data = f.read(4 * KEY_BYTES)
    material = _parse(data)
    if material is None:
        raise fail('does not hold a 256-bit key (%d bytes); it must hold 32 '
                   'random bytes, raw or as 64 hexadecimal digits: "(umask '
                   '077; openssl rand -hex 32 > FILE)"' % len(data))
    return Key(_key_id(material), material)


_cache = {}


def current_key():
    """The key in [database] secret_key_file, read again when the file
    changes (a rotation needs no restart)."""
    path = CONF.database.secret_key_file
    try:
        info = os.stat(path) if path else None
    except OSError:
        info = None
    stamp = info and (info.st_ino, info.st_mtime_ns, info.st_size,
                      info.st_mode)
    cached = _cache.get(path)
    if stamp is None or cached is None or cached[0] != stamp:
        # A missing or unreadable file raises here, every time.
        cached = _cache[path] = (stamp, load_key(path))
    return cached[1]


def create_key_file(path):
    """Write a new random key to ``path`` (mode 0600), which must not
    exist; return the key."""
    material = os.urandom(KEY_BYTES)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                 0o600)
    with os.fdopen(fd, 'w') as f:
        f.write(material.hex() + '\n')
    return Key(_key_id(material), material)


def is_wrapped(stored):
    """Whether ``stored`` is a wrapped value (not a clear legacy one)."""
    return stored.startswith(PREFIX)


def key_id_of(stored):
    """The id of the key ``stored`` is wrapped with (None: clear)."""
    return stored.split(':', 2)[1] if is_wrapped(stored) else None


def wrap(secret, grant_uuid, key=None):
    """``secret`` (text) of grant ``grant_uuid`` wrapped with ``key``
    (default: the current key), as stored."""
    key = key or current_key()
    nonce = os.urandom(NONCE_BYTES)
    sealed = aead.AESGCM(key.material).encrypt(
        nonce, secret.encode('utf-8'), grant_uuid.encode('ascii'))
    return '%s%s:%s' % (PREFIX, key.key_id, base64.urlsafe_b64encode(
        nonce + sealed).decode('ascii').rstrip('='))


def unwrap(stored, grant_uuid, keys=None):
    """The clear secret of grant ``grant_uuid`` from its ``stored`` value,
    with whichever of ``keys`` (default: the current key) wrapped it.
    Raises ClearSecret for a clear legacy value, SecretUnavailable when no
    key given wrapped it or it does not authenticate (altered, or copied
    from another grant's row)."""
    if not is_wrapped(stored):
        raise ClearSecret(grant_uuid)
    keys = keys or [current_key()]
    key_id = key_id_of(stored)
    key = next((k for k in keys if k.key_id == key_id), None)
    if key is None:
        raise SecretUnavailable(grant=grant_uuid, reason=(
            'is wrapped with key %s, not with the key in %s (%s); if the key '
            'was replaced, run "%s --old-key-file OLD_KEY_FILE"' % (
                key_id, OPTION, ', '.join(k.key_id for k in keys), REWRAP)))
    body = stored.split(':', 2)[2]
    try:
        raw = base64.urlsafe_b64decode(body + '=' * (-len(body) % 4))
        clear = aead.AESGCM(key.material).decrypt(
            raw[:NONCE_BYTES], raw[NONCE_BYTES:], grant_uuid.encode('ascii'))
    except (InvalidTag, ValueError, binascii.Error):
        raise SecretUnavailable(grant=grant_uuid, reason=(
            'does not authenticate under key %s: the stored value was '
            "altered or belongs to another grant's row" % key_id))
    return clear.decode('utf-8')
