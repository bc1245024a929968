"""Put a written temp file in place of another: exchange the two names where the kernel can, else rename.

Why not always ``os.replace``: on ext4 (and on XFS), a rename over an existing file starts
writeback of the new file's data before it returns (``auto_da_alloc``, a guard for programs that
replace files without fsync), which costs a replace over a 1 KB file ~0.14 ms and over a 1 MB one
~0.7 ms on the reference machine. Linux's ``renameat2(RENAME_EXCHANGE)`` swaps the two names in
one atomic step without that flush (~0.03 ms with the unlink after it): readers see the old
file or the new one, as with a rename, and the old file, now under the temp name, is unlinked.
Where the exchange is missing (another OS, an old kernel, a file system without it) the rename
is used. Callers that need the new file durable fsync it first, and the directory after, as with
a rename; a crash between the exchange and the unlink leaves the old file under a temp name, which
the next writer removes as any stray temp.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from typing import Final

__all__ = ["exchange", "put_in_place"]

_EXCHANGE: Final = 2  # RENAME_EXCHANGE, <linux/fs.h>
_AT_FDCWD: Final = -100
# errnos meaning "this kernel or file system cannot exchange": fall back to rename for good
_UNSUPPORTED: Final = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP})
# EPERM may be a sandbox's syscall filter, or a real refusal: the rename tries, and says which
_RENAME_DECIDES: Final = frozenset({errno.EPERM, errno.EXDEV})

_renameat2: Callable[..., int] | bool | None = None  # None: not looked up yet; False: there is none
_get_errno: Callable[[], int] = lambda: 0  # noqa: E731 -- replaced by ctypes.get_errno at the lookup


def _lookup() -> Callable[..., int] | None:
    global _renameat2, _get_errno  # noqa: PLW0603 -- one lookup per process
    if _renameat2 is None:
        _renameat2 = False
        if sys.platform.startswith("linux"):
            import ctypes  # noqa: PLC0415 -- only a writer pays for it, once

            try:
                function = ctypes.CDLL(None, use_errno=True).renameat2
            except (AttributeError, OSError):
                pass  # a C library without it (glibc < 2.28, some musl builds)
            else:
                function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
                function.restype = ctypes.c_int
                _renameat2, _get_errno = function, ctypes.get_errno
    return None if isinstance(_renameat2, bool) else _renameat2


def exchange(first: str | os.PathLike[str], second: str | os.PathLike[str]) -> None:
    """Swap the two names atomically (both must exist).

    :raises OSError: with the kernel's errno; ``ENOSYS`` where there is no ``renameat2``.
    """
    function = _lookup()
    if function is None or function(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _EXCHANGE) != 0:
        code = errno.ENOSYS if function is None else _get_errno()
        raise OSError(code, os.strerror(code), os.fspath(first), None, os.fspath(second))


def put_in_place(tmp: str, target: str | os.PathLike[str]) -> None:
    """Put the file at *tmp* at *target*, atomically for readers; *tmp* is gone afterwards.

    :raises OSError: if neither the exchange nor the rename can be made (the target unchanged,
        *tmp* still there for the caller to remove).
    """
    global _renameat2  # noqa: PLW0603 -- a file system that refuses turns the exchange off
    if _renameat2 is not False:
        try:
            exchange(tmp, target)
        except FileNotFoundError:
            pass  # nothing at the target yet: a plain rename makes the name
        except OSError as exc:
            if exc.errno in _UNSUPPORTED:
                _renameat2 = False
            elif exc.errno not in _RENAME_DECIDES:
                raise
        else:
            try:
                os.unlink(tmp)  # the old file, now under the temp name
            except IsADirectoryError:
                exchange(tmp, target)  # a directory stood there: put it back and refuse, as a rename does
                raise OSError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(target)) from None
            except OSError:
                pass  # the new file is in place; the old one stays under a temp name for the next sweep
            return
    os.replace(tmp, target)
