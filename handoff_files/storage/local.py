"""The seam on a local folder: conditional writes with ``link`` (create) and a lock and ``rename`` (replace).

- **create** writes a temp file beside the key, flushes it, then hard-links it to the key's name:
  ``link`` fails when the name exists, atomically, so of several writers (threads or processes)
  racing for one key exactly one wins, with no lock; the loser's temp file is removed.
- **replace** takes the folder's ``flock``, reads the object, compares its etag, and renames a
  flushed temp file over it; readers see the old bytes or the new ones, never a mix.
- the **etag** is the BLAKE3 digest of the bytes (truncated to 32 hex digits): it changes with
  every write of other bytes, as S3's does, and needs no clock.

Every folder between the root and a key is opened with ``O_NOFOLLOW`` (``foundation/safe_paths.py``):
a link planted inside the root is refused, never followed (the root itself is named by the caller).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import blake3

from handoff_files.foundation.atomic import write_all
from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffTooLargeError,
    HandoffWriteError,
    ObjectChangedError,
    ObjectExistsError,
)
from handoff_files.foundation.safe_paths import open_dir_under
from handoff_files.storage.seam import Stored, check_data, check_key, under

__all__ = ["LocalStorage"]

_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: what replace reads to compare an etag: past it the object is not one this library wrote
_REPLACE_LIMIT: Final = 256 * 1024 * 1024


def etag_of(data: bytes) -> str:
    """The etag of *data*: its BLAKE3 digest, 32 hex digits."""
    return blake3.blake3(data).hexdigest()[:32]


class LocalStorage:
    """Objects as files under the folder *root* (made on the first write, mode 0700)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"LocalStorage({os.fspath(self.root)!r})"

    @property
    def where(self) -> str:
        """The folder, as given."""
        return os.fspath(self.root)

    def read(self, key: str, *, limit: int) -> Stored:
        """See :meth:`~handoff_files.storage.seam.Storage.read`."""
        path = self._path(key)
        with self._folder(key, make=False) as (folder, name):
            data = _read_at(folder, name, path, limit)
        return Stored(data, etag_of(data))

    def read_changed(self, key: str, etag: str, *, limit: int) -> Stored | None:
        """See :meth:`~handoff_files.storage.seam.Storage.read_changed` (a folder reads the file to tell)."""
        stored = self.read(key, limit=limit)
        return None if stored.etag == etag else stored

    def create(self, key: str, data: bytes) -> str:
        """See :meth:`~handoff_files.storage.seam.Storage.create`."""
        path = self._path(key)
        data = check_data(data, os.fspath(path))
        with self._folder(key, make=True) as (folder, name):
            temp = _flushed_temp(folder, data, path)
            try:
                os.link(temp, name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
            except FileExistsError:
                raise ObjectExistsError(path, "already exists: another writer created it first") from None
            except OSError as exc:
                raise HandoffWriteError(path, f"cannot create it: {exc.strerror or exc}") from exc
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=folder)
            _flush_folder(folder, path)
        return etag_of(data)

    def replace(self, key: str, data: bytes, etag: str) -> str:
        """See :meth:`~handoff_files.storage.seam.Storage.replace`."""
        path = self._path(key)
        data = check_data(data, os.fspath(path))
        with self._locked(), self._folder(key, make=False) as (folder, name):
            try:
                now = etag_of(_read_at(folder, name, path, _REPLACE_LIMIT))
            except HandoffNotFoundError:
                raise ObjectChangedError(path, f"is gone: it was at {etag} when read") from None
            if now != etag:
                raise ObjectChangedError(path, f"changed since it was read: at {now}, not {etag}")
            temp = _flushed_temp(folder, data, path)
            try:
                os.rename(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=folder)
                raise HandoffWriteError(path, f"cannot replace it: {exc.strerror or exc}") from exc
            _flush_folder(folder, path)
        return etag_of(data)

    def list(self, prefix: str = "") -> list[str]:
        """See :meth:`~handoff_files.storage.seam.Storage.list`."""
        start, _, _ = prefix.rpartition("/")
        if start:
            check_key(start, self.where)
        with open_dir_under(self.root, self.root.joinpath(*start.split("/")) if start else self.root) as folder:
            if folder is None:
                return []
            return under(_walk(folder, f"{start}/" if start else ""), prefix)

    def remove(self, key: str) -> None:
        """See :meth:`~handoff_files.storage.seam.Storage.remove`."""
        path = self._path(key)
        try:
            with self._locked(), self._folder(key, make=False) as (folder, name):
                try:
                    os.unlink(name, dir_fd=folder)
                except FileNotFoundError:
                    return
                except OSError as exc:
                    raise HandoffWriteError(path, f"cannot remove it: {exc.strerror or exc}") from exc
        except HandoffNotFoundError:
            return

    def _path(self, key: str) -> Path:
        return self.root / check_key(key, self.where)

    @contextlib.contextmanager
    def _folder(self, key: str, *, make: bool) -> Iterator[tuple[int, str]]:
        """The open folder that holds *key* (each folder below the root opened without following a link:
        :mod:`~handoff_files.foundation.safe_paths`), and the key's last part; with *make*, missing folders are made."""
        *parts, name = key.split("/")
        folder = self.root.joinpath(*parts)
        with open_dir_under(self.root, folder, create=make) as fd:
            if fd is None:
                raise HandoffNotFoundError(folder, "no such folder")
            yield fd, name

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The root folder's ``flock``: replaces and removes of this store, one at a time, any process."""
        try:
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            raise HandoffNotFoundError(self.root, "no such folder") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def _read_at(folder: int, name: str, path: Path, limit: int) -> bytes:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    except FileNotFoundError:
        raise HandoffNotFoundError(path, "no such object") from None
    except OSError as exc:
        raise HandoffError(path, f"cannot read it (a link is never followed): {exc.strerror or exc}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise HandoffError(path, "not a regular file")
        if st.st_size > limit:
            raise HandoffTooLargeError(path, f"{st.st_size} bytes, more than the {limit} read")
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise HandoffTooLargeError(path, f"grew past the {limit} bytes read while it was read")
        return data
    finally:
        os.close(fd)


def _flushed_temp(folder: int, data: bytes, path: Path) -> str:
    """A new temp file in *folder* holding *data*, flushed; its name."""
    temp = f".tmp-{secrets.token_hex(8)}"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
    except OSError as exc:
        raise HandoffWriteError(path, f"cannot write a temp file beside it: {exc.strerror or exc}") from exc
    try:
        write_all(fd, data)
        os.fsync(fd)
    except OSError as exc:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=folder)
        raise HandoffWriteError(path, f"cannot write it: {exc.strerror or exc}") from exc
    os.close(fd)
    return temp


def _flush_folder(folder: int, path: Path) -> None:
    try:
        os.fsync(folder)
    except OSError as exc:
        raise HandoffWriteError(path, f"written, but its folder could not be flushed: {exc.strerror or exc}") from exc


def _walk(folder: int, base: str) -> Iterator[str]:
    """The keys below the open *folder* (named *base*), depth first; links, temp files and others passed over."""
    with os.scandir(folder) as entries:
        found = [(e.name, e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False)) for e in entries]
    for name, is_dir, is_file in found:
        if name.startswith("."):
            continue  # temp files, and nothing this library names
        if is_file:
            yield base + name
        elif is_dir:
            try:
                inner = os.open(name, _DIR_FLAGS, dir_fd=folder)
            except OSError:
                continue  # replaced by a link since it was listed: passed over
            try:
                yield from _walk(inner, f"{base}{name}/")
            finally:
                os.close(inner)
