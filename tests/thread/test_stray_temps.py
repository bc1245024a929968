"""A writer killed between creating its temp file and putting it in place leaves ``.<name>.<random>.tmp``.

Opening the store removes every such file the library can leave, whatever file it was writing:
the kill test found a ``.retention.json.*.tmp`` that no one swept (its name was not in the pattern).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from handoff_files import HandoffStore
from handoff_files.foundation.atomic import _temp_beside

# every file the library writes in a thread with write_durable (a temp file beside it, then a rename)
WRITTEN = [
    "handoff.json",
    "handoff.yaml",
    "state.json",
    "transferred.json",
    "retention.json",
    "journal.jsonl",
    "journal.1.jsonl",
    "history/00000001.json",
    "history/00000001.yaml",
]


@pytest.mark.parametrize("target", WRITTEN)
def test_a_dead_writers_temp_file_is_removed_when_the_store_opens(tmp_path: Path, target: str) -> None:
    store = HandoffStore(tmp_path / "t")
    store.save({"narrative": "Step one done."})
    fd, name = _temp_beside(tmp_path / "t" / target)  # what write_durable makes first
    os.write(fd, b"half")
    os.close(fd)
    assert store.layout.stray_temps() == [Path(name)]
    HandoffStore(tmp_path / "t").restore()
    assert not Path(name).exists()


def test_a_file_not_ours_is_never_taken_for_a_temp(tmp_path: Path) -> None:
    store = HandoffStore(tmp_path / "t")
    store.save({"narrative": "Step one done."})
    theirs = [tmp_path / "t" / ".notes.md.abcd2345.tmp", tmp_path / "t" / ".retention.json.tmp"]
    for path in theirs:
        path.write_bytes(b"a person's")
    HandoffStore(tmp_path / "t").restore()
    assert all(path.exists() for path in theirs)
