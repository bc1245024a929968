"""The acknowledgement key: a per-user secret kept outside every thread directory.

A briefing's acknowledgement code is derived from this key and the generation it shows, so a
process that reads only a thread's files cannot work the code out: it has to read the briefing.
The key lives in ``$HANDOFF_FILES_KEY`` if set (a path), else in the user's state directory:
``$XDG_STATE_HOME/handoff-files/ack.key`` (``~/.local/state/…`` when unset). It is made once,
32 random bytes in hex, mode 0600, and read on every use.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
from pathlib import Path
from typing import Final

from handoff_files.foundation.errors import AckKeyError

__all__ = ["KEY_ENV", "ack_key", "key_path"]

#: The environment variable naming the key file (a path), overriding the state directory.
KEY_ENV: Final = "HANDOFF_FILES_KEY"
_KEY_BYTES: Final = 32
_HEX: Final = re.compile(r"[0-9a-f]{64}")


def key_path() -> Path:
    """Where the acknowledgement key lives (see the module's docstring)."""
    named = os.environ.get(KEY_ENV)
    if named:
        return Path(named).expanduser()
    state = os.environ.get("XDG_STATE_HOME")
    return (Path(state) if state else Path.home() / ".local" / "state") / "handoff-files" / "ack.key"


def ack_key() -> bytes:
    """The key, made on first use (atomically: two processes making it at once agree on one).

    The file must be a regular file (not a symbolic link) owned by this user and readable by no
    one else: a key another user could read or plant would let a process that never read a
    briefing produce its code.

    :raises AckKeyError: if the key file cannot be made or read, is not private to this user, or
        does not hold a key.
    """
    path = key_path()
    try:
        text = _read_private(path)
    except FileNotFoundError:
        text = _make(path)
    key = bytes.fromhex(text.strip()) if _HEX.fullmatch(text.strip()) else b""
    if len(key) != _KEY_BYTES:
        msg = f"not an acknowledgement key ({_KEY_BYTES} bytes in hex); remove it and one is made anew"
        raise AckKeyError(path, msg)
    return key


def _read_private(path: Path) -> str:
    """The key file's text, if it is a regular file of this user's that no one else can read or write.

    :raises FileNotFoundError: if there is none yet.
    :raises AckKeyError: if it is something else, or cannot be read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as exc:
        msg = f"cannot read the acknowledgement key: {exc.strerror or exc} (it must be a plain file, not a link)"
        raise AckKeyError(path, msg) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            msg = (
                f"the acknowledgement key must be a plain file of yours with mode 0600 "
                f"(it is mode {stat.S_IMODE(st.st_mode):04o}, owner {st.st_uid}); remove it and one is made anew"
            )
            raise AckKeyError(path, msg)
        return os.read(fd, 4096).decode("ascii", errors="replace")
    except OSError as exc:
        msg = f"cannot read the acknowledgement key: {exc.strerror or exc}"
        raise AckKeyError(path, msg) from exc
    finally:
        os.close(fd)


def _make(path: Path) -> str:
    text = secrets.token_hex(_KEY_BYTES) + "\n"
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, text.encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(temp, path)  # fails if another process made it first: theirs is the key
        except FileExistsError:
            return _read_private(path)
        finally:
            os.unlink(temp)
    except OSError as exc:
        msg = f"cannot make the acknowledgement key: {exc.strerror or exc}"
        raise AckKeyError(path, msg) from exc
    return text
