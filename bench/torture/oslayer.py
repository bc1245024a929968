"""The OS layer: an in-process interposer over the ``os`` calls of a save and a restore, to count, fail or record them.

This is the torture suite's one stand-in for the real thing, and it is here because the real
thing cannot be had: the kernel cannot be made to fail a chosen ``fsync`` with ENOSPC or EIO on
demand without root-only tools (dm-flakey, dm-error, the fault-injection debugfs), and
``strace -e inject`` can fail a system call with an errno but cannot make a ``write`` really write
half its buffer and return the shorter count. So while a :class:`Layer` is entered, the functions
of the ``os`` module named in :data:`OS_CALLS` (and ``io.open``, through which pathlib reads) are
replaced, for the entering thread only, by wrappers that hand each call to :meth:`Layer.handle`.
The disk underneath stays real: a call the layer does not fail is passed to the real function and
really happens; a short write really writes the bytes it reports.

What the wrappers reach: ``tempfile.mkstemp`` and the writers' lock call ``os.open`` through the module;
pathlib's ``exists``/``is_dir``/``is_symlink`` call ``os.stat``, its ``mkdir``/``unlink`` call
``os.mkdir``/``os.unlink``, ``os.path.realpath`` calls ``os.lstat``; pathlib's ``open`` and
``read_bytes`` call ``io.open``, whose file objects are wrapped so that their ``read`` and ``seek``
pass through the layer too. Not reached: ``fcntl.flock`` (the writers' lock itself) and calls made
from C without going through these module attributes.

Three layers are built on it: the base :class:`Layer` counts and describes calls;
:class:`FaultLayer` fails one call (or every call from one on) with ENOSPC, EIO or EROFS, or
shortens a write (the ``faults`` part); :class:`Recorder` logs what each call did to the tree
under a root as :class:`Op` values (the ``powerloss`` part's trace), and can play a broken writer
by turning fsyncs into no-ops.
"""

from __future__ import annotations

import errno
import io
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, Self

from handoff_files.foundation import swap

__all__ = [
    "DIR",
    "ERRNOS",
    "FAULT_KINDS",
    "FILE_CALLS",
    "OS_CALLS",
    "REAL",
    "Broken",
    "Call",
    "FaultKind",
    "FaultLayer",
    "Layer",
    "Op",
    "Recorder",
    "fault_applies",
    "parent",
]

#: The ``os`` functions the layer replaces: every one the save, restore and acknowledge paths
#: call (the library's own modules, tempfile and pathlib).
OS_CALLS: Final = (
    "open",
    "read",
    "pread",
    "write",
    "pwrite",
    "fsync",
    "fdatasync",
    "replace",
    "rename",
    "link",
    "unlink",
    "mkdir",
    "ftruncate",
    "close",
    "listdir",
    "scandir",
    "stat",
    "lstat",
    "fstat",
    "fchmod",
)
#: Calls the library makes through its own module rather than ``os``: the name-exchange primitive
#: (``renameat2`` through ctypes, which no ``os`` attribute reaches).
LIBRARY_CALLS: Final = {"exchange": swap}
#: The calls made through ``io.open`` (pathlib's ``open`` and ``read_bytes``) and its file objects.
FILE_CALLS: Final = ("io.open", "file.read", "file.seek")
#: The real functions, taken before any layer replaces them: the layer's own bookkeeping uses these.
REAL: Final[dict[str, Callable[..., Any]]] = {
    **{name: getattr(os, name) for name in OS_CALLS},
    **{name: getattr(module, name) for name, module in LIBRARY_CALLS.items()},
}
_REAL_IO_OPEN: Final = io.open

FaultKind = Literal["ENOSPC", "EIO", "EROFS", "short-write"]
#: The faults :class:`FaultLayer` injects: three errnos, and a write that writes only part of its buffer.
FAULT_KINDS: Final[tuple[FaultKind, ...]] = ("ENOSPC", "EIO", "EROFS", "short-write")
ERRNOS: Final[dict[str, int]] = {"ENOSPC": errno.ENOSPC, "EIO": errno.EIO, "EROFS": errno.EROFS}
_WRITES: Final = frozenset({"write", "pwrite"})
_TWO_PATHS: Final = frozenset({"replace", "rename", "link", "exchange"})

_lock = threading.Lock()
_active: Layer | None = None


@dataclass(frozen=True, slots=True)
class Call:
    """One call that went through the layer: its index (0-based, in call order), name and arguments."""

    index: int
    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    target: str  # the path (or the path an fd was opened on), for messages


def fault_applies(kind: FaultKind, name: str) -> bool:
    """Whether *kind* can be injected into a call named *name*: an errno into any call, a short write into writes."""
    return kind != "short-write" or name in _WRITES


class Layer:
    """Route the calls of :data:`OS_CALLS` and :data:`FILE_CALLS` through :meth:`handle` while entered.

    Only calls from the thread that entered the layer are routed; calls from other threads, and
    calls made while :meth:`handle` runs or inside :meth:`paused`, go straight to the real functions.
    One layer can be entered at a time. The base class passes every call through and keeps a log.
    """

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._owner: int | None = None
        self._busy = False
        self._fd_paths: dict[int, str] = {}

    # -- what subclasses change ----------------------------------------------------------------

    def handle(self, call: Call, real: Callable[..., Any]) -> Any:
        """Do *call*: the default calls the real function. Subclasses fail, shorten or record it."""
        return real(*call.args, **call.kwargs)

    # -- plumbing ------------------------------------------------------------------------------

    def describe(self, index: int) -> str:
        """A call as a person reads it: ``#17 fsync(history/.00000004.json.x.tmp)``."""
        call = self.calls[index]
        return f"#{index} {call.name}({call.target})"

    def names(self) -> list[str]:
        """The names of the calls routed so far, in order."""
        return [call.name for call in self.calls]

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Let calls through untouched and unlogged for the duration of the block (the caller's own checks)."""
        busy, self._busy = self._busy, True
        try:
            yield
        finally:
            self._busy = busy

    def _target(self, name: str, args: tuple[Any, ...]) -> str:
        if not args:
            return ""
        first = args[0]
        if isinstance(first, int) and not isinstance(first, bool):
            return self._fd_paths.get(first, f"fd {first}")
        try:
            text = os.fsdecode(first)
        except TypeError:
            return repr(first)
        if name in _TWO_PATHS and len(args) > 1:
            return f"{text} -> {os.fsdecode(args[1])}"
        return text

    def _route(
        self,
        name: str,
        real: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        target: str | None = None,
    ) -> Any:
        if self._busy or threading.get_ident() != self._owner:
            return real(*args, **kwargs)
        call = Call(len(self.calls), name, args, kwargs, self._target(name, args) if target is None else target)
        self.calls.append(call)
        self._busy = True
        try:
            result = self.handle(call, real)
        finally:
            self._busy = False
        if name == "open" and isinstance(result, int):
            self._fd_paths[result] = call.target
        elif name == "close" and args:
            self._fd_paths.pop(args[0], None)
        return result

    def _wrap(self, name: str) -> Callable[..., Any]:
        real = REAL[name]

        def routed(*args: Any, **kwargs: Any) -> Any:
            return self._route(name, real, args, kwargs)

        routed.__name__ = name
        return routed

    def _io_open(self, *args: Any, **kwargs: Any) -> Any:
        handle = self._route("io.open", _REAL_IO_OPEN, args, kwargs)
        mode = args[1] if len(args) > 1 else kwargs.get("mode", "r")
        if self._busy or threading.get_ident() != self._owner or any(c in mode for c in "wax+"):
            return handle
        return _File(self, handle, self._target("io.open", args))

    def __enter__(self) -> Self:
        global _active  # noqa: PLW0603 -- the os module is process-wide, so is the one layer patching it
        with _lock:
            if _active is not None:
                msg = "another OS layer is already entered"
                raise RuntimeError(msg)
            _active = self
        self._owner = threading.get_ident()
        for name in OS_CALLS:
            setattr(os, name, self._wrap(name))
        for name, module in LIBRARY_CALLS.items():
            setattr(module, name, self._wrap(name))
        setattr(io, "open", self._io_open)  # noqa: B010 -- assigning io.open directly upsets the type checker
        return self

    def __exit__(self, *exc_info: object) -> None:
        global _active  # noqa: PLW0603 -- see __enter__
        for name in OS_CALLS:
            setattr(os, name, REAL[name])
        for name, module in LIBRARY_CALLS.items():
            setattr(module, name, REAL[name])
        setattr(io, "open", _REAL_IO_OPEN)  # noqa: B010 -- see __enter__
        self._owner = None
        with _lock:
            _active = None


class _File:
    """A file object from ``io.open`` whose ``read`` and ``seek`` go through the layer."""

    def __init__(self, layer: Layer, raw: Any, target: str) -> None:
        self._layer = layer
        self._raw = raw
        self._target = target

    def read(self, *args: Any) -> Any:
        return self._layer._route("file.read", self._raw.read, args, {}, self._target)

    def seek(self, *args: Any) -> Any:
        return self._layer._route("file.seek", self._raw.seek, args, {}, self._target)

    def __enter__(self) -> _File:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._raw.close()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._raw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


class FaultLayer(Layer):
    """Inject one fault kind at call *at*: once (later calls succeed) or, if *persistent*, at every call from *at* on.

    An errno fault raises the ``OSError`` the kernel would and does nothing else, except for
    ``close``: Linux releases the descriptor even when ``close`` reports an error, so the real
    ``close`` runs first. A short write really writes the first half of the buffer and returns
    that count (a buffer of one byte is written whole: it cannot be shorter). ``at=None`` injects
    nothing: the layer only counts calls.
    """

    def __init__(self, kind: FaultKind = "EIO", at: int | None = None, *, persistent: bool = False) -> None:
        super().__init__()
        self.kind: FaultKind = kind
        self.at = at
        self.persistent = persistent
        self.injected: list[int] = []  # indices of the calls that were failed or shortened

    def _armed(self, index: int) -> bool:
        if self.at is None:
            return False
        return index == self.at or (self.persistent and index > self.at)

    def handle(self, call: Call, real: Callable[..., Any]) -> Any:
        if not self._armed(call.index) or not fault_applies(self.kind, call.name):
            return real(*call.args, **call.kwargs)
        if self.kind == "short-write":
            return self._short_write(call, real)
        if call.name == "close":
            real(*call.args, **call.kwargs)
        self.injected.append(call.index)
        code = ERRNOS[self.kind]
        if call.name in _TWO_PATHS and len(call.args) > 1:
            raise OSError(code, os.strerror(code), os.fsdecode(call.args[0]), None, os.fsdecode(call.args[1]))
        if call.args and not isinstance(call.args[0], int):
            raise OSError(code, os.strerror(code), call.target)
        raise OSError(code, os.strerror(code))

    def _short_write(self, call: Call, real: Callable[..., Any]) -> Any:
        fd, data, *rest = call.args
        view = memoryview(data).cast("B")
        if len(view) < 2:
            return real(*call.args, **call.kwargs)
        self.injected.append(call.index)
        return real(fd, view[: len(view) // 2], *rest, **call.kwargs)


# -- recording: the filesystem operations a traced save makes ---------------------------------

#: The "inode" of a directory in a recorder's names.
DIR: Final = -1
Broken = Literal["no-dir-fsync", "no-file-fsync"]


@dataclass(frozen=True, slots=True)
class Op:
    """One filesystem operation a :class:`Recorder` saw."""

    kind: Literal["create", "mkdir", "rename", "exchange", "link", "unlink", "write", "truncate", "sync"]
    path: str = ""  # create, mkdir, unlink: the name; rename, exchange, link: the source; sync of a directory: it
    dest: str = ""  # rename, exchange, link: the new name
    inode: int = DIR  # the file it is about (DIR for a directory's sync)
    other: int = DIR  # exchange: the file that was at dest (it ends up at path)
    offset: int = 0  # write: where; truncate: the new length
    data: bytes = b""  # write: the bytes the call wrote
    extends: bool = False  # write: whether it grew the file when it was made

    @property
    def namespace(self) -> bool:
        """Whether a directory fsync (not a file fsync) makes it durable."""
        return self.kind in ("create", "mkdir", "rename", "exchange", "link", "unlink")

    def directories(self) -> tuple[str, ...]:
        """The directories whose fsync a namespace operation waits for."""
        if self.kind in ("rename", "exchange", "link"):
            return tuple(dict.fromkeys((parent(self.path), parent(self.dest))))
        return (parent(self.path),)


def parent(path: str) -> str:
    """The directory of a name relative to the traced root (``"."`` for the root itself)."""
    return os.path.dirname(path) or "."  # noqa: PTH120 -- names here are plain relative strings


class Recorder(Layer):
    """Do every call for real, and log in :attr:`ops` the ones that changed the tree under *root*.

    :param tree: the tree before: relative names to inode numbers (:data:`DIR` for a directory).
    :param sizes: the size of each inode's file.
    :param broken: turn the directory fsyncs (``"no-dir-fsync"``) or the file fsyncs and
        fdatasyncs (``"no-file-fsync"``) into no-ops that are not logged: a broken writer.
    :raises RuntimeError: (from the traced code) on what the log cannot express: a write through
        ``io.open`` under *root*, a directory renamed, a rename across the root's edge.
    """

    def __init__(self, root: Path, tree: dict[str, int], sizes: dict[int, int], *, broken: Broken | None) -> None:
        super().__init__()
        self.root = str(root.absolute())
        self.tree = dict(tree)
        self.sizes = dict(sizes)
        self.ops: list[Op] = []
        self.broken = broken
        self.skipped = 0  # fsyncs the broken writer did not make
        self._next_inode = max(sizes, default=-1) + 1
        self._files: dict[int, tuple[int, bool]] = {}  # fd -> (inode, opened with O_APPEND)
        self._dirs: dict[int, str] = {}  # fd of a directory -> its name

    def handle(self, call: Call, real: Callable[..., Any]) -> Any:
        """Do the call for real; log it if it changed the tree under the root."""
        method = getattr(self, "_on_" + call.name.replace(".", "_"), None)
        return real(*call.args, **call.kwargs) if method is None else method(call, real)

    def _relative(self, path: Any) -> str | None:
        absolute = os.path.abspath(os.fsdecode(path))  # noqa: PTH100 -- no symlinks to resolve: a plain join
        if absolute == self.root:
            return "."
        if not absolute.startswith(self.root + os.sep):
            return None
        return os.path.relpath(absolute, self.root)

    def _log(self, op: Op) -> None:
        self.ops.append(op)
        if op.kind == "create":
            self.tree[op.path] = op.inode
            self.sizes[op.inode] = 0
        elif op.kind == "mkdir":
            self.tree[op.path] = DIR
        elif op.kind in ("rename", "link"):
            if op.kind == "rename":
                del self.tree[op.path]
            self.tree[op.dest] = op.inode
        elif op.kind == "exchange":
            self.tree[op.path], self.tree[op.dest] = op.other, op.inode
        elif op.kind == "unlink":
            del self.tree[op.path]
        elif op.kind == "write":
            self.sizes[op.inode] = max(self.sizes[op.inode], op.offset + len(op.data))
        elif op.kind == "truncate":
            self.sizes[op.inode] = op.offset

    def _where(self, path: Any, dir_fd: int | None) -> str | None:
        """The name under the root of *path*, relative to the directory *dir_fd* if given; None if outside it."""
        if dir_fd is None:
            return self._relative(path)
        base = self._dirs.get(dir_fd)
        if base is None:
            return None  # a directory outside the root (or not opened while tracing)
        joined = os.path.normpath(os.path.join(base, os.fsdecode(path)))  # noqa: PTH118 -- plain relative strings
        return None if joined == ".." or joined.startswith("../") else joined

    def _on_open(self, call: Call, real: Callable[..., Any]) -> Any:
        name = self._where(call.args[0], call.kwargs.get("dir_fd"))
        before = None if name is None else self.tree.get(name)
        fd = real(*call.args, **call.kwargs)
        flags = call.args[1]
        if name is None:
            return fd
        if before == DIR or name == "." or flags & os.O_DIRECTORY:
            self._dirs[fd] = name
            return fd
        if before is None:
            before = self._next_inode
            self._next_inode += 1
            self._log(Op("create", name, inode=before))
        elif flags & os.O_TRUNC and self.sizes[before]:
            self._log(Op("truncate", inode=before, offset=0))
        self._files[fd] = (before, bool(flags & os.O_APPEND))
        return fd

    def _on_write(self, call: Call, real: Callable[..., Any]) -> Any:
        fd = call.args[0]
        if fd not in self._files:
            return real(*call.args, **call.kwargs)
        inode, append = self._files[fd]
        offset = self.sizes[inode] if append else os.lseek(fd, 0, os.SEEK_CUR)
        return self._write(call, real, inode, offset)

    def _on_pwrite(self, call: Call, real: Callable[..., Any]) -> Any:
        fd = call.args[0]
        if fd not in self._files:
            return real(*call.args, **call.kwargs)
        return self._write(call, real, self._files[fd][0], call.args[2])

    def _write(self, call: Call, real: Callable[..., Any], inode: int, offset: int) -> Any:
        size = self.sizes[inode]
        written = real(*call.args, **call.kwargs)
        data = bytes(memoryview(call.args[1]).cast("B")[:written])
        self._log(Op("write", inode=inode, offset=offset, data=data, extends=offset + len(data) > size))
        return written

    def _on_ftruncate(self, call: Call, real: Callable[..., Any]) -> Any:
        fd, length = call.args
        result = real(*call.args, **call.kwargs)
        if fd in self._files:
            self._log(Op("truncate", inode=self._files[fd][0], offset=length))
        return result

    def _on_fsync(self, call: Call, real: Callable[..., Any]) -> Any:
        fd = call.args[0]
        if fd in self._dirs or fd in self._files:
            directory = fd in self._dirs
            if self.broken == ("no-dir-fsync" if directory else "no-file-fsync"):
                self.skipped += 1
                return None
            result = real(*call.args, **call.kwargs)
            self._log(Op("sync", self._dirs[fd]) if directory else Op("sync", inode=self._files[fd][0]))
            return result
        return real(*call.args, **call.kwargs)

    _on_fdatasync = _on_fsync

    def _on_replace(self, call: Call, real: Callable[..., Any]) -> Any:
        return self._move(call, real, "rename")

    _on_rename = _on_replace

    def _on_link(self, call: Call, real: Callable[..., Any]) -> Any:
        return self._move(call, real, "link")

    def _move(self, call: Call, real: Callable[..., Any], kind: Literal["rename", "link"]) -> Any:
        source = self._where(call.args[0], call.kwargs.get("src_dir_fd"))
        dest = self._where(call.args[1], call.kwargs.get("dst_dir_fd"))
        result = real(*call.args, **call.kwargs)
        if (source is None) != (dest is None):
            msg = f"{kind} across the traced root's edge is not modelled: {call.args[:2]}"
            raise RuntimeError(msg)
        if source is not None and dest is not None:
            if self.tree[source] == DIR:
                msg = f"renaming a directory is not modelled: {source}"
                raise RuntimeError(msg)
            self._log(Op(kind, source, dest, inode=self.tree[source]))
        return result

    def _on_exchange(self, call: Call, real: Callable[..., Any]) -> Any:
        first, second = (self._relative(path) for path in call.args[:2])
        if first is None and second is None:  # wholly outside (the user's trust record): not the thread's
            return real(*call.args, **call.kwargs)
        if first is None or second is None:
            msg = f"an exchange across the traced root's edge is not modelled: {call.args[:2]}"
            raise RuntimeError(msg)
        inodes = self.tree.get(first), self.tree.get(second)
        result = real(*call.args, **call.kwargs)  # raises (and logs nothing) when a name is missing
        if DIR in inodes:
            msg = f"exchanging a directory is not modelled: {first}, {second}"
            raise RuntimeError(msg)
        self._log(Op("exchange", first, second, inode=inodes[0] or 0, other=inodes[1] or 0))
        return result

    def _on_unlink(self, call: Call, real: Callable[..., Any]) -> Any:
        name = self._where(call.args[0], call.kwargs.get("dir_fd"))
        inode = None if name is None else self.tree.get(name)
        result = real(*call.args, **call.kwargs)
        if name is not None and inode is not None:
            self._log(Op("unlink", name, inode=inode))
        return result

    def _on_mkdir(self, call: Call, real: Callable[..., Any]) -> Any:
        name = self._where(call.args[0], call.kwargs.get("dir_fd"))
        result = real(*call.args, **call.kwargs)
        if name is not None:
            self._log(Op("mkdir", name))
        return result

    def _on_close(self, call: Call, real: Callable[..., Any]) -> Any:
        self._files.pop(call.args[0], None)
        self._dirs.pop(call.args[0], None)
        return real(*call.args, **call.kwargs)

    def _on_io_open(self, call: Call, real: Callable[..., Any]) -> Any:
        mode = call.args[1] if len(call.args) > 1 else call.kwargs.get("mode", "r")
        if any(flag in mode for flag in "wax+") and self._relative(call.args[0]) is not None:
            msg = f"a write through io.open is not traced: {call.args[0]} ({mode})"
            raise RuntimeError(msg)
        return real(*call.args, **call.kwargs)
