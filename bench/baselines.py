"""The baselines: the least work a durable save and a verified load could do, to compare the library with."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import orjson

__all__ = ["json_and_sha256", "minimal_durable_write", "orjson_and_sha256", "two_copy_durable_write"]


def minimal_durable_write(path: Path, data: bytes) -> None:
    """Replace *path* with *data* atomically and durably, and nothing more.

    ``mkstemp`` beside the target, write every byte, fsync, ``os.replace`` over the old file,
    fsync the directory: the floor under any save that survives a crash.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def two_copy_durable_write(history: Path, generation: int, target: Path, data: bytes) -> None:
    """The disk floor of the store's protocol: a durable new file in *history*, then a durable replace of *target*.

    Two minimal durable writes, the same bytes each: what any save that keeps a separate,
    durable history copy of every generation (as the store does) cannot go below.
    """
    minimal_durable_write(history / f"{generation:08d}.json", data)
    minimal_durable_write(target, data)
    old = history / f"{generation - 10:08d}.json"  # keep ten, as the store does by default
    if old.exists():
        old.unlink()


def orjson_and_sha256(path: Path) -> str:
    """Read *path*, parse it with orjson and sha256 its bytes: the floor under a verified load."""
    data = path.read_bytes()
    orjson.loads(data)
    return hashlib.sha256(data).hexdigest()


def json_and_sha256(path: Path) -> str:
    """As :func:`orjson_and_sha256` with the stdlib parser: a second reference."""
    data = path.read_bytes()
    json.loads(data)
    return hashlib.sha256(data).hexdigest()
