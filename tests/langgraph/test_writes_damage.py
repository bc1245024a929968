"""A pending-writes file as hostile input: bounded before it is read, a verified line kept, damage refused by name."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

from handoff_files import HandoffError
from handoff_files.foundation.errors import HandoffTooLargeError, HandoffWriteError
from handoff_files.langgraph import HandoffSaver, layout

_THREAD: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


def _saver_with_writes(root: Path) -> tuple[HandoffSaver, Any, Path]:
    """A checkpoint with two acknowledged pending writes: the saver, its config and the writes file."""
    saver = HandoffSaver(root)
    checkpoint = create_checkpoint(empty_checkpoint(), None, 1)
    checkpoint["channel_values"] = {"n": 2}
    checkpoint["channel_versions"] = {"n": 3}
    config = saver.put(_THREAD, checkpoint, {}, {})
    saver.put_writes(config, [("n", 3), ("note", "gen 2")], task_id="task")
    (path,) = (root / "t" / "writes").glob("*.jsonl")
    return saver, config, path


def _refused(call: Any, path: Path, kind: type[HandoffError] = HandoffError) -> HandoffError:
    with pytest.raises(kind) as caught:
        call()
    assert str(path) in str(caught.value)
    return caught.value


def test_a_sparse_8_gib_writes_file_is_refused_by_size_before_it_is_read(tmp_path: Path) -> None:
    saver, config, path = _saver_with_writes(tmp_path / "graphs")
    os.truncate(path, 8 << 30)  # sparse: no disk used, but reading it whole would take 8 GiB of memory
    error = _refused(lambda: saver.get_tuple(config), path, HandoffTooLargeError)
    assert f"{layout.MAX_WRITES_BYTES:,}-byte limit" in str(error)


def test_put_writes_never_grows_a_writes_file_past_the_limit_its_reader_keeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The read bound is what the saver writes: an append that would cross it is refused, the file left as it was."""
    saver, config, path = _saver_with_writes(tmp_path / "graphs")
    before = path.read_bytes()
    monkeypatch.setattr(layout, "MAX_WRITES_BYTES", len(before) + 10)
    _refused(lambda: saver.put_writes(config, [("n", "x" * 100)], task_id="other"), path, HandoffWriteError)
    assert path.read_bytes() == before
    got = saver.get_tuple(config)
    assert got is not None
    assert got.pending_writes == [("task", "n", 3), ("task", "note", "gen 2")]


def test_a_last_line_that_verifies_but_lost_its_newline_is_kept_and_the_next_append_keeps_it(
    tmp_path: Path,
) -> None:
    """put_writes returned after the whole line was synced: a line that checks is a write it acknowledged."""
    saver, config, path = _saver_with_writes(tmp_path / "graphs")
    path.write_bytes(path.read_bytes()[:-1])
    got = saver.get_tuple(config)
    assert got is not None
    assert got.pending_writes == [("task", "n", 3), ("task", "note", "gen 2")]
    saver.put_writes(config, [("n", 4)], task_id="later")  # ends the kept line, never cuts it
    got = saver.get_tuple(config)
    assert got is not None
    assert got.pending_writes == [("later", "n", 4), ("task", "n", 3), ("task", "note", "gen 2")]
    assert path.read_bytes().endswith(b"\n")
    assert path.read_bytes().count(b"\n") == 3


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: b"\0" * 4096, id="all-nul-bytes"),
        pytest.param(lambda data: data + b"\0" * 4096, id="nul-bytes-after-the-lines"),
        pytest.param(lambda data: data + b"garbage", id="text-that-starts-no-line"),
    ],
)
def test_a_last_piece_that_is_no_line_the_saver_writes_is_refused_naming_the_file(tmp_path: Path, damage: Any) -> None:
    """Damage is reported as the saver reports a damaged checkpoint (a HandoffError), never read as no writes."""
    saver, config, path = _saver_with_writes(tmp_path / "graphs")
    path.write_bytes(damage(path.read_bytes()))
    damaged = path.read_bytes()
    error = _refused(lambda: saver.get_tuple(config), path)
    assert "not the start of a line the saver writes" in str(error)
    _refused(lambda: saver.put_writes(config, [("n", 4)], task_id="later"), path)
    assert path.read_bytes() == damaged  # not cut away by the next append either


def test_a_torn_start_of_a_line_is_still_passed_over_as_a_crash_mid_append(tmp_path: Path) -> None:
    saver, config, path = _saver_with_writes(tmp_path / "graphs")
    with path.open("ab") as handle:
        handle.write(b'{"task_id":"again","ta')  # put_writes never returned for it
    got = saver.get_tuple(config)
    assert got is not None
    assert got.pending_writes == [("task", "n", 3), ("task", "note", "gen 2")]
