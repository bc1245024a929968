"""Reading a trust file (``allowed_signers``, ``revoked_keys``): bounded, UTF-8, and writable by its owner alone.

Whoever can write these files decides whom the library trusts, so they are refused unless they are
this user's (or root's) and writable by their owner only: ssh's rule for ``authorized_keys``. They
are hostile input until read: at most 1 MiB and 10,000 lines (8 KiB a line, checked by the readers
of lines), a regular file (a FIFO is refused, never waited on).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Final

from handoff_files.foundation.atomic import read_bytes
from handoff_files.foundation.errors import HandoffError, HandoffParseError

__all__ = ["BLANK", "KEY_TYPES", "MAX_BYTES", "MAX_LINE", "MAX_LINES", "read_trust_file"]

MAX_BYTES: Final = 1024 * 1024
MAX_LINES: Final = 10_000
MAX_LINE: Final = 8 * 1024
#: The key types OpenSSH names (a word that is one starts the key, after the principals and options).
KEY_TYPES: Final = re.compile(r"(ssh-|ecdsa-|sk-|rsa-sha2-)[a-z0-9@.\-]+")
#: OpenSSH splits a line's words at spaces and tabs, never at other blank space.
BLANK: Final = " \t"


def read_trust_file(path: Path) -> str:
    """The text of a trust file, read with bounds and refused unless only its owner (this user or root) may write it.

    :raises HandoffNotFoundError: if it does not exist.
    :raises HandoffParseError: if it is too large, has too many lines, is a binary KRL or is not UTF-8.
    :raises HandoffError: if it is not a regular file, or someone else may write it.
    """
    data, st = read_bytes(path, MAX_BYTES)
    # ssh's StrictModes rule: whoever can write it decides whom the library trusts
    if st.st_mode & 0o022 or st.st_uid not in (os.getuid(), 0):
        msg = (
            f"mode {stat.S_IMODE(st.st_mode):04o}, owner uid {st.st_uid}: a trust file must be this user's "
            "(or root's) and writable by its owner only (chmod go-w), as ssh requires of authorized_keys"
        )
        raise HandoffError(path, msg)
    if data.startswith(b"SSHKRL"):
        msg = "a binary key revocation list (KRL) is not read here; list the revoked keys as public key lines"
        raise HandoffParseError(path, msg)
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        msg = f"not UTF-8 text: {exc}"
        raise HandoffParseError(path, msg) from exc
    if text.count("\n") > MAX_LINES:
        msg = f"over {MAX_LINES:,} lines"
        raise HandoffParseError(path, msg)
    return text
