"""open_regular: the one safe open for every file the library reads, writes or appends to."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffParseError,
    HandoffTooLargeError,
    HandoffWriteError,
)
from handoff_files.foundation.safe_open import open_regular

_APPEND = os.O_RDWR | os.O_APPEND | os.O_CREAT


def test_a_regular_file_opens_with_its_stat(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abc")
    fd, st = open_regular(path, os.O_RDONLY, max_bytes=3)
    try:
        assert st.st_size == 3
        assert os.read(fd, 10) == b"abc"
    finally:
        os.close(fd)


def test_a_missing_file_is_not_found_and_a_file_not_found_error(tmp_path: Path) -> None:
    with pytest.raises(HandoffNotFoundError) as caught:
        open_regular(tmp_path / "gone", os.O_RDONLY, max_bytes=None)
    assert isinstance(caught.value, FileNotFoundError)


@pytest.mark.parametrize(
    ("flags", "error"),
    [
        pytest.param(os.O_RDONLY, HandoffParseError, id="read"),
        pytest.param(os.O_WRONLY | os.O_APPEND, HandoffWriteError, id="write-no-reader"),
        pytest.param(_APPEND, HandoffWriteError, id="append"),
    ],
)
def test_a_fifo_is_refused_at_once_whatever_the_flags(tmp_path: Path, flags: int, error: type[HandoffError]) -> None:
    fifo = tmp_path / "journal.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(error, match="not a regular file") as caught:
        open_regular(fifo, flags, max_bytes=None)
    assert caught.value.path == str(fifo)


def test_a_folder_and_a_socket_are_refused(tmp_path: Path) -> None:
    with pytest.raises(HandoffParseError, match="not a regular file"):
        open_regular(tmp_path, os.O_RDONLY, max_bytes=None)
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "s"))
        with pytest.raises(HandoffError, match="not a regular file"):
            open_regular(tmp_path / "s", os.O_RDONLY, max_bytes=None)
    finally:
        sock.close()


def test_a_symbolic_link_is_never_followed(tmp_path: Path) -> None:
    target = tmp_path / "outside"
    target.write_bytes(b"x")
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(HandoffError, match="symbolic link"):
        open_regular(tmp_path / "link", os.O_RDONLY, max_bytes=None)
    with pytest.raises(HandoffWriteError, match="symbolic link"):
        open_regular(tmp_path / "link", _APPEND, max_bytes=None)
    assert target.read_bytes() == b"x"


def test_a_hard_linked_file_is_refused_for_writing_but_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_bytes(b"precious")
    os.link(outside, tmp_path / "journal.jsonl")
    with pytest.raises(HandoffWriteError, match="2 hard links"):
        open_regular(tmp_path / "journal.jsonl", _APPEND, max_bytes=None)
    fd, _ = open_regular(tmp_path / "journal.jsonl", os.O_RDONLY, max_bytes=None)
    os.close(fd)
    assert outside.read_bytes() == b"precious"


def test_a_file_past_the_bound_is_too_large_without_being_read(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    with path.open("wb") as handle:
        handle.truncate(8 << 30)  # sparse: no disk used
    with pytest.raises(HandoffTooLargeError, match="8,589,934,592 bytes"):
        open_regular(path, os.O_RDONLY, max_bytes=1 << 20)
    with pytest.raises(HandoffWriteError, match="over the"):
        open_regular(path, _APPEND, max_bytes=1 << 20)
