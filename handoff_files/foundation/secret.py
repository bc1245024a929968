"""The acknowledgement key: a per-user secret kept outside every thread directory.

A briefing's acknowledgement code is derived from this key and the generation it shows, so a
process that reads only a thread's files cannot work the code out: it has to read the briefing.
The key lives in ``$HANDOFF_FILES_KEY`` if set (a path), else in the user's state directory:
``$XDG_STATE_HOME/handoff-files/ack.key`` (``~/.local/state/…`` when unset). It is made once,
32 random bytes in hex, mode 0600, and read on every use.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Final

from handoff_files.foundation.errors import HandoffError

__all__ = ["KEY_ENV", "ack_key", "key_path"]

#: The environment variable naming the key file (a path), overriding the state directory.
KEY_ENV: Final = "HANDOFF_FILES_KEY"
_KEY_BYTES: Final = 32


def key_path() -> Path:
    """Where the acknowledgement key lives (see the module's docstring)."""
    named = os.environ.get(KEY_ENV)
    if named:
        return Path(named).expanduser()
    state = os.environ.get("XDG_STATE_HOME")
    return (Path(state) if state else Path.home() / ".local" / "state") / "handoff-files" / "ack.key"


def ack_key() -> bytes:
    """The key, made on first use (atomically: two processes making it at once agree on one).

    :raises HandoffError: if the key file cannot be made or read, or does not hold a key.
    """
    path = key_path()
    try:
        text = path.read_text(encoding="ascii")
    except FileNotFoundError:
        text = _make(path)
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"cannot read the acknowledgement key: {getattr(exc, 'strerror', None) or exc}"
        raise HandoffError(path, msg) from exc
    try:
        key = bytes.fromhex(text.strip())
    except ValueError:
        key = b""
    if len(key) != _KEY_BYTES:
        msg = f"not an acknowledgement key ({_KEY_BYTES} bytes in hex); remove it and one is made anew"
        raise HandoffError(path, msg)
    return key


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
            return path.read_text(encoding="ascii")
        finally:
            os.unlink(temp)
    except OSError as exc:
        msg = f"cannot make the acknowledgement key: {exc.strerror or exc}"
        raise HandoffError(path, msg) from exc
    return text
