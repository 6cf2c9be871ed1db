"""This machine's transcript key: HMAC-SHA256 signatures that a re-chained edit cannot rebuild.

The hash chain (transcript.py) has no key: anyone who edits a transcript can recompute it, so it
proves only that nothing was damaged by accident. A signature made with a key that never leaves
this machine's config folder proves more: the line was written here, by this tool, as it is now.
The key is 32 random bytes in ``$XDG_CONFIG_HOME/latency-wizard/transcript.key`` (default
``~/.config/latency-wizard/``), created with mode 0600 the first time a transcript is written, and
never printed. A transcript names the key it was signed with by ``key_id``, a hash of the key from
which the key cannot be recovered, so that one signed elsewhere is told from one edited here.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
from pathlib import Path

KEY_FILE = "transcript.key"
KEY_BYTES = 32
# Read no more than a key's hex and a newline: a huge or endless file there is not our key.
_MAX_KEY_FILE = 2 * KEY_BYTES + 2


def config_dir() -> Path:
    """``$XDG_CONFIG_HOME/latency-wizard``, or ``~/.config/latency-wizard`` (XDG's default)."""
    base = os.environ.get("XDG_CONFIG_HOME") or ""
    # XDG: a relative value is invalid and is ignored.
    root = Path(base) if Path(base).is_absolute() else Path.home() / ".config"
    return root / "latency-wizard"


class Key:
    """A signing key; its bytes never leave this object except into ``hmac``."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret
        self.id = hashlib.sha256(b"latency-wizard transcript key id\n" + secret).hexdigest()[:16]

    def sign(self, text: str) -> str:
        """HMAC-SHA256 of ``text`` (UTF-8), hex."""
        return hmac.new(self._secret, text.encode("utf-8"), hashlib.sha256).hexdigest()

    def verifies(self, text: str, signature: object) -> bool:
        """Whether ``signature`` is this key's signature of ``text`` (compared in constant time)."""
        return isinstance(signature, str) and hmac.compare_digest(self.sign(text), signature)

    def __repr__(self) -> str:  # never the secret, even in a traceback's locals
        return f"Key(id={self.id})"


def local_key(create: bool = False) -> Key | None:
    """This machine's key; with ``create`` made on first use. None when there is none (and
    ``create`` is false) or it cannot be read or made: a transcript is then written unsigned,
    never refused for want of a key."""
    path = config_dir() / KEY_FILE
    with contextlib.suppress(OSError, ValueError):
        return _read(path)
    if not create:
        return None
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it meanwhile: use theirs
        with contextlib.suppress(OSError, ValueError):
            return _read(path)
        return None
    except OSError:
        return None
    secret = secrets.token_bytes(KEY_BYTES)
    try:
        os.write(fd, secret.hex().encode("ascii") + b"\n")
        os.fsync(fd)
    except OSError:
        os.close(fd)
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    os.close(fd)
    return Key(secret)


def _read(path: Path) -> Key:
    with path.open("rb") as handle:
        text = handle.read(_MAX_KEY_FILE + 1).strip()
    secret = bytes.fromhex(text.decode("ascii"))  # ValueError on anything else
    if len(secret) != KEY_BYTES:
        raise ValueError("not a transcript key")
    return Key(secret)
