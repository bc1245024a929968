"""Folders under a root that the library writes into: real folders, opened one by one, no link followed.

The root is the caller's to name (a link there is theirs to follow). Below it, each folder is
opened relative to its parent's descriptor with ``O_NOFOLLOW | O_DIRECTORY``: a symbolic link
planted anywhere on the way is refused, naming it, and nothing is read or written through it.
The descriptor of the last folder is handed out, so a file opened relative to it lands in the
folder that was checked, whatever is renamed meanwhile.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Final, NoReturn

from handoff_files.foundation.errors import HandoffError, HandoffValidationError, HandoffWriteError, InvalidNameError

__all__ = ["dir_under", "open_dir_under", "refuse_link"]

_DIR: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NO_LINK: Final = _DIR | os.O_NOFOLLOW
#: What the refusal of a link says: the reason, and what to do.
LINK_REASON: Final = (
    "is a symbolic link where the library keeps a folder of its own; it is never followed, so nothing "
    "is read or written outside the root: remove the link (or put the real folder in its place)"
)


def refuse_link(path: Path) -> NoReturn:
    """Raise the refusal of a planted link at *path*.

    :raises InvalidNameError: always.
    """
    raise InvalidNameError(path, LINK_REASON)


def _refuse(parent: int, name: str, path: Path, exc: OSError) -> NoReturn:
    """*name* in *parent* could not be opened as a folder: say whether it is a link, something else, or unreadable."""
    try:
        mode = os.lstat(name, dir_fd=parent).st_mode
    except OSError:
        mode = 0
    if stat.S_ISLNK(mode):
        refuse_link(path)
    if exc.errno in (errno.ENOTDIR, errno.ELOOP):
        msg = "not a folder: the library keeps a folder of its own here; move this aside"
        raise HandoffValidationError(path, msg) from exc
    msg = f"cannot open the folder: {exc.strerror or exc}"
    raise HandoffError(path, msg) from exc


def _open_root(root: Path, *, create: bool) -> int | None:
    try:
        try:
            return os.open(root, _DIR)
        except FileNotFoundError:
            if not create:
                return None
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        return os.open(root, _DIR)
    except NotADirectoryError as exc:
        msg = "not a folder"
        raise HandoffValidationError(root, msg) from exc
    except OSError as exc:
        msg = f"cannot {'create' if create else 'open'} the folder: {exc.strerror or exc}"
        raise (HandoffWriteError if create else HandoffError)(root, msg) from exc


def _step(fd: int, name: str, path: Path, *, create: bool) -> int | None:
    """Open (with *create*, make first if missing, 0700) the folder *name* in *fd*; None if it is missing."""
    try:
        return os.open(name, _NO_LINK, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            return None
    except OSError as exc:
        _refuse(fd, name, path, exc)
    try:
        os.mkdir(name, 0o700, dir_fd=fd)
    except FileExistsError:
        pass  # another process made it meanwhile (or planted something: the open below tells)
    except OSError as exc:
        msg = f"cannot create the folder: {exc.strerror or exc}"
        raise HandoffWriteError(path, msg) from exc
    else:
        try:
            os.fsync(fd)  # a new folder is not durable until its parent's entry is
        except OSError as exc:
            msg = f"cannot flush the new folder's entry: {exc.strerror or exc}"
            raise HandoffWriteError(path, msg) from exc
    try:
        return os.open(name, _NO_LINK, dir_fd=fd)
    except OSError as exc:
        _refuse(fd, name, path, exc)


@contextlib.contextmanager
def open_dir_under(root: Path, path: Path, *, create: bool = False) -> Iterator[int | None]:
    """The descriptor of *path*, a folder at or under *root*, each folder below *root* opened without following a link.

    :param create: make each missing folder (mode 0700), and *root* itself if missing.
    :returns: (as a context manager) the folder's descriptor, closed on exit; None if a folder
        on the way does not exist (never, with *create*).
    :raises InvalidNameError: if a folder on the way is a symbolic link, or *path* is not under *root*.
    :raises HandoffValidationError: if one is a file or other non-folder.
    :raises HandoffWriteError: if one cannot be created.
    :raises HandoffError: if one cannot be opened.
    """
    try:
        parts = path.relative_to(root).parts
    except ValueError as exc:
        msg = f"not under the root {root}"
        raise InvalidNameError(path, msg) from exc
    if ".." in parts:
        msg = f"'..' would leave the root {root}"
        raise InvalidNameError(path, msg)
    fd = _open_root(root, create=create)
    try:
        here = root
        for name in parts:
            here /= name
            if fd is None:
                break
            child = _step(fd, name, here, create=create)
            os.close(fd)
            fd = child
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


def dir_under(root: Path, path: Path, *, create: bool = False) -> bool:
    """Whether *path* is a real folder under *root* (made, with *create*); a link on the way is refused.

    Raises as :func:`open_dir_under`.
    """
    with open_dir_under(root, path, create=create) as fd:
        return fd is not None
