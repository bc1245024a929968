"""Group-shared mode: the permissions a store shared by agents running as different users creates, and checks.

A private store (the default) creates folders 0700 and files 0600, as it always has. A shared store
creates folders 0770 with the setgid bit (so every file in them takes the folder's group, not its
writer's) and files 0660, set explicitly after creation so a 022 or 077 umask does not narrow them.
An existing folder or file narrower than that is never widened silently: it is an error naming it
and the ``chmod`` to run.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final

from handoff_files.foundation.atomic import write_durable
from handoff_files.foundation.errors import HandoffError

__all__ = [
    "PRIVATE_DIR_MODE",
    "PRIVATE_FILE_MODE",
    "SHARED_DIR_MODE",
    "SHARED_FILE_MODE",
    "check_shared",
    "create_file",
    "make_dir",
    "write_durable_mode",
]

PRIVATE_DIR_MODE: Final = 0o700
PRIVATE_FILE_MODE: Final = 0o600
#: rwx for owner and group, and setgid: files created inside take the folder's group.
SHARED_DIR_MODE: Final = 0o2770
SHARED_FILE_MODE: Final = 0o660
_TEMP_FLAGS: Final = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def make_dir(path: Path, *, shared: bool) -> None:
    """Create the folder *path* (its parent exists): 0700, or 0770 with setgid if *shared*, whatever the umask.

    An existing folder is left as it is (see :func:`check_shared`).

    :raises OSError: if it cannot be created or its mode set.
    """
    try:
        path.mkdir(mode=SHARED_DIR_MODE if shared else PRIVATE_DIR_MODE)
    except FileExistsError:
        return
    if shared:
        # mkdir's mode passes through the umask, and never sets setgid: set it explicitly
        path.chmod(SHARED_DIR_MODE)


def check_shared(path: Path) -> None:
    """Refuse an existing folder or file at *path* narrower than a shared store needs; a missing one is fine.

    :raises HandoffError: naming *path*, its mode, and the ``chmod`` that would share it.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        msg = f"cannot look at it: {exc.strerror or exc}"
        raise HandoffError(path, msg) from exc
    folder = stat.S_ISDIR(st.st_mode)
    wanted = SHARED_DIR_MODE if folder else SHARED_FILE_MODE
    mode = stat.S_IMODE(st.st_mode)
    if mode & wanted != wanted:
        kind = "folder" if folder else "file"
        msg = (
            f"is a {kind} with mode {mode:04o}, narrower than a shared store needs ({wanted:04o}), "
            f"and a shared store never widens what it did not create; to share it, run: "
            f"chmod {wanted:o} {os.fspath(path)}"
        )
        raise HandoffError(path, msg)


def create_file(path: Path, *, shared: bool) -> None:
    """Create the empty file *path* if it is missing: 0600, or 0660 if *shared*, whatever the umask.

    :raises OSError: if it cannot be created or its mode set.
    """
    try:
        fd = os.open(path, _TEMP_FLAGS, SHARED_FILE_MODE if shared else PRIVATE_FILE_MODE)
    except FileExistsError:
        return
    try:
        if shared:
            os.fchmod(fd, SHARED_FILE_MODE)
    finally:
        os.close(fd)


def write_durable_mode(path: Path, data: bytes, *, shared: bool) -> None:
    """:func:`~handoff_files.foundation.atomic.write_durable`, with the file 0660 if *shared*.

    The mode is set on the temp file before it is put in place, so no reader in the group ever
    finds the file unreadable. Private: exactly ``write_durable``.

    :raises HandoffWriteError: on any OS error, naming the path and the errno.
    """
    write_durable(path, data, mode=SHARED_FILE_MODE if shared else PRIVATE_FILE_MODE)
