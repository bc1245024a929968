"""prune_history: the newest N generation files stay, older ones go, a person's kept copies never do."""

from __future__ import annotations

from pathlib import Path

import pytest

from handoff_files import HandoffStore, HandoffValidationError, prune_history
from handoff_files.thread.journal import Journal
from tests.writer_child import content


def _thread(thread_dir: Path, saves: int = 6) -> HandoffStore:
    store = HandoffStore(thread_dir)
    for step in range(1, saves + 1):
        store.save(content("w", step, 0))
    return store


def test_pruning_keeps_the_newest_and_journals_what_went(thread_dir: Path) -> None:
    store = _thread(thread_dir)
    (thread_dir / "history" / "displaced-20260101T000000000000Z.json").write_text("{}")
    kept, removed = prune_history(thread_dir, 2)
    assert kept == ["00000006.json", "00000005.json"]
    assert removed == ["00000004.json", "00000003.json", "00000002.json", "00000001.json"]
    left = sorted(path.name for path in (thread_dir / "history").iterdir())
    assert left == ["00000005.json", "00000006.json", "displaced-20260101T000000000000Z.json"]
    assert store.restore().generation == 6
    last, _ = Journal(thread_dir).last("pruned")
    assert last is not None
    assert "removed 4 older generation file(s)" in last.summary
    assert store.save(content("w", 7, 0)).generation == 7


def test_a_dry_run_removes_nothing(thread_dir: Path) -> None:
    _thread(thread_dir)
    before = sorted(path.name for path in (thread_dir / "history").iterdir())
    kept, removed = prune_history(thread_dir, 1, dry_run=True)
    assert (len(kept), len(removed)) == (1, 5)
    assert sorted(path.name for path in (thread_dir / "history").iterdir()) == before
    assert Journal(thread_dir).last("pruned")[0] is None


def test_keep_below_one_is_refused(thread_dir: Path) -> None:
    _thread(thread_dir, 2)
    with pytest.raises(HandoffValidationError, match=r"keep must be a whole number, 1 or more \(the newest"):
        prune_history(thread_dir, 0)
    assert len(list((thread_dir / "history").iterdir())) == 2


def test_handoff_prune_on_a_thread_keeps_its_newest_generation_files(
    thread_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from handoff_files.cli.main import main

    _thread(thread_dir, 4)
    assert main(["prune", str(thread_dir), "--keep", "2", "--dry-run"]) == 0
    assert "would remove history/00000002.json" in capsys.readouterr().out
    assert len(list((thread_dir / "history").iterdir())) == 4
    assert main(["prune", str(thread_dir), "--keep", "2"]) == 0
    assert sorted(path.name for path in (thread_dir / "history").iterdir()) == ["00000003.json", "00000004.json"]
