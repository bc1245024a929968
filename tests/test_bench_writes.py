"""The writes bench: each round puts first, untimed, then times one write for the checkpoint before the newest."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import bench_writes
from handoff_files.langgraph import HandoffSaver


def test_rounds_time_a_write_that_lands_with_the_checkpoint_before_the_newest(tmp_path: Path) -> None:
    saver = HandoffSaver(tmp_path / "graphs")
    threads = {"a": bench_writes._Thread(saver, "a"), "b": bench_writes._Thread(saver, "b")}
    for thread in threads.values():
        for _ in range(3):
            thread.put()
    times = bench_writes._late_writes(threads, rounds=4)
    assert {name: len(found) for name, found in times.items()} == {"a": 4, "b": 4}
    assert all(seconds > 0 for found in times.values() for seconds in found)
    thread = threads["a"]
    assert thread.count == 3 + 5  # one put per round, the warm-up included
    written = saver.get_tuple(thread.before)
    assert written is not None
    assert written.pending_writes is not None
    assert [value for _, _, value in written.pending_writes] == [f"write {thread.count}"]


def test_without_sqlite_it_says_so_and_fails(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(bench_writes, "missing", lambda: "SqliteSaver not measured: not installed here")
    assert bench_writes.main(["--quick"]) == 1
    assert "SqliteSaver not measured" in capsys.readouterr().err
