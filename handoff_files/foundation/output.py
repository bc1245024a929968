"""Output a person names (``-o PATH``): written into what PATH is; a link, device or shared file never swapped out."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from handoff_files.foundation.atomic import write_all, write_durable
from handoff_files.foundation.errors import HandoffWriteError

__all__ = ["write_output"]


def write_output(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write *data* into the file a person named, as a demanding person means it.

    - **a regular file, or a new name**: replaced atomically and durably (temp → fsync → rename →
      directory fsync), keeping the file's permission bits (a new file is 0600). A failed write
      leaves what the file held as it was.
    - **a symbolic link**: the person named it, so its target is written (as above); the link
      stays a link. A dangling link creates its target.
    - **a regular file with other hard links**: refused, nothing written. Replacing it would cut
      it from its other names, and writing in place could leave it half-written if the write
      failed; a shell's ``>`` writes into it in place, if that is what is wanted.
    - **a FIFO or a character device** (``/dev/stdout``, ``/dev/full``, a named pipe): written
      into in place, as a shell's ``>`` does (not fsynced: a device has no disk copy to flush);
      never replaced by a regular file.
    - **anything else** (a directory, a socket, a block device): refused.

    :returns: the file written: *path*, or for a link, its target.
    :raises HandoffWriteError: if it is refused or the write fails, naming the path and the reason.
    """
    named = Path(path)
    try:
        st = named.stat()  # through a link: the person named what it points at
    except FileNotFoundError:
        st = None
    except OSError as exc:
        msg = f"cannot look at it: {exc.strerror or exc}"
        raise HandoffWriteError(named, msg) from exc
    if st is None or stat.S_ISREG(st.st_mode):
        if st is not None and st.st_nlink > 1:
            msg = (
                f"has {st.st_nlink} hard links: replacing it would cut it from its other names, and writing in "
                f"place could leave it half-written, so nothing was written; to write into it in place, print to "
                f"stdout and redirect (> {named})"
            )
            raise HandoffWriteError(named, msg)
        target = Path(os.path.realpath(named))
        write_durable(target, data, mode=0o600 if st is None else stat.S_IMODE(st.st_mode))
        return target
    if stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode):
        _write_in_place(named, data)
        return named
    kind = "a directory" if stat.S_ISDIR(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "a block device"
    msg = f"is {kind}: output goes to a file (a regular file, a FIFO, or a character device such as /dev/stdout)"
    raise HandoffWriteError(named, msg)


def _write_in_place(path: Path, data: bytes) -> None:
    """Write every byte into a FIFO or a character device, opened as it is (a FIFO waits for its reader)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as exc:
        msg = f"cannot open it for writing: {exc.strerror or exc}"
        raise HandoffWriteError(path, msg) from exc
    try:
        write_all(fd, data)
    except OSError as exc:
        msg = f"write failed: {exc.strerror or exc}"
        raise HandoffWriteError(path, msg) from exc
    finally:
        os.close(fd)
