"""write_output: ``-o PATH`` written into what PATH names; a failed write leaves what was there."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from handoff_files.foundation import atomic
from handoff_files.foundation.errors import HandoffWriteError
from handoff_files.foundation.output import write_output


def test_a_failed_write_leaves_the_file_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out.json"
    out.write_bytes(b"what was there")

    def full(fd: int, data: bytes) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic, "write_all", full)
    with pytest.raises(HandoffWriteError, match="No space left on device"):
        write_output(out, b"new")
    assert out.read_bytes() == b"what was there"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"], "no temp file is left behind"


def test_a_dangling_link_creates_its_target_and_stays_a_link(tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "target")
    assert write_output(link, b"data") == tmp_path / "target"
    assert link.is_symlink()
    assert (tmp_path / "target").read_bytes() == b"data"


def test_a_link_to_a_hard_linked_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"kept")
    os.link(tmp_path / "a", tmp_path / "b")
    (tmp_path / "link").symlink_to(tmp_path / "a")
    with pytest.raises(HandoffWriteError, match="has 2 hard links"):
        write_output(tmp_path / "link", b"new")
    assert (tmp_path / "b").read_bytes() == b"kept"
