"""Regressions found by review of the recovery work: each was a real bug, reproduced here first."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import handoff_files.thread.journal as journal_module
from handoff_files import HandoffStore, load
from handoff_files.format.versions import legacy_checksum
from handoff_files.thread.doctor import examine
from handoff_files.thread.journal import Journal, torn
from handoff_files.thread.settings import Durability


def saves(thread_dir: Path, n: int, fmt: str = "json", *, durability: Durability = "journal") -> HandoffStore:
    store = HandoffStore(thread_dir, format=fmt, durability=durability)  # type: ignore[arg-type]
    for i in range(1, n + 1):
        store.save({"narrative": f"Step {i} done.", "state": {"data": {"step": i}}})
    return store


def test_doctor_never_repairs_backwards_over_a_newer_state_json(thread_dir: Path) -> None:
    # full saves: only they leave a generation whose last trace is state.json (a journal-first one has its line)
    store = saves(thread_dir, 3, durability="full")
    store.primary.write_bytes(b"{")
    (store.history_dir / "00000003.json").write_bytes(b"{")
    assert HandoffStore(thread_dir).restore().source == "rebuilt"
    findings = examine(HandoffStore(thread_dir), repair=True)
    assert any("survives only in state.json" in f.what for f in findings)
    # told once, as what it is: not also "ok" in the same run
    assert not [f for f in findings if f.level == "ok" and "state.json" in f.what], findings
    assert json.loads(store.mirror_path.read_text(encoding="utf-8"))["generation"] == 3
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, restored.generation) == ("rebuilt", 3)


def test_a_torn_tail_is_cut_before_a_rotation_carries_it_away(
    thread_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "ROTATE_BYTES", 500)
    store = saves(thread_dir, 3)
    with store.journal.path.open("ab") as handle:
        handle.write(b'{"torn')
    store.save({"narrative": "after the tear"})
    assert not torn(store.journal.path)
    assert not torn(store.journal.previous)


def test_doctor_reports_a_symlink_and_never_changes_what_it_points_at(thread_dir: Path, tmp_path: Path) -> None:
    saves(thread_dir, 1)
    outside = tmp_path / "outside.txt"
    outside.write_text("x", encoding="utf-8")
    outside.chmod(0o644)
    (thread_dir / "link").symlink_to(outside)
    findings = examine(HandoffStore(thread_dir), repair=True)
    assert (outside.stat().st_mode & 0o777) == 0o644
    assert any("symbolic link" in f.what for f in findings)


def test_a_journal_line_with_a_huge_integer_is_damaged_not_a_crash(thread_dir: Path) -> None:
    store = saves(thread_dir, 2)
    with store.journal.path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"at": "x", "event": "saved", "generation": 2**70, "check": "0" * 16}) + "\n")
        handle.write("[" * 5000 + "]" * 5000 + "\n")
    assert HandoffStore(thread_dir).restore().generation == 2
    entries, problems = Journal(thread_dir).entries()
    assert len(problems) == 2
    assert [e.event for e in entries] == ["document", "saved"] * 2  # each journal-first save: two lines


def test_an_older_version_file_in_the_primarys_place_does_not_shadow_a_sealed_generation(thread_dir: Path) -> None:
    store = saves(thread_dir, 2)
    state = {"active_tasks": ["foreign"]}
    legacy = {
        "schema_version": "1.0",
        "session_id": 2,
        "created_at": "2026-01-01T00:00:00",
        "state": state,
        "narrative": "someone else's",
        "decisions": [],
        "priorities": [],
        "warnings": [],
        "checksum": legacy_checksum(state),
    }
    store.primary.write_text(json.dumps(legacy, indent=2), encoding="utf-8")
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, restored.generation, restored.handoff.narrative) == ("history", 2, "Step 2 done.")
    assert any("older-version file" in p for p in restored.problems)


def test_the_journal_alone_keeps_a_generation_from_being_reused(thread_dir: Path) -> None:
    store = saves(thread_dir, 7)
    store.primary.unlink()
    for path in store.history_dir.iterdir():
        path.unlink()
    store.mirror_path.write_text("{}", encoding="utf-8")
    assert HandoffStore(thread_dir).save({"narrative": "again"}).generation == 8


def test_seal_works_on_a_hand_written_thread_with_no_history_folder(thread_dir: Path) -> None:
    store = saves(thread_dir, 1)
    text = store.primary.read_text(encoding="utf-8").replace("Step 1 done.", "Edited by hand.")
    for path in store.history_dir.iterdir():
        path.unlink()
    store.history_dir.rmdir()
    store.primary.write_text(text, encoding="utf-8")
    created = json.loads(text)["created_at"]
    import datetime as dt

    stamp = dt.datetime.fromisoformat(created).timestamp() + 60
    os.utime(store.primary, (stamp, stamp))
    receipt = HandoffStore(thread_dir).seal()
    assert receipt.generation == 2
    assert load(receipt.path).narrative == "Edited by hand."


def test_doctor_on_a_yaml_thread_repairs_from_the_yaml_history_copy(thread_dir: Path) -> None:
    store = saves(thread_dir, 2, fmt="yaml")
    store.primary.unlink()
    findings = examine(HandoffStore(thread_dir, format="yaml"), repair=True)
    assert any(f.level == "repaired" and "00000002.yaml" in f.advice for f in findings)
    assert load(thread_dir / "handoff.yaml").generation == 2


def test_the_save_after_a_rebuilt_restore_chains_to_the_lost_generations_seal(thread_dir: Path) -> None:
    # full saves: the rebuilt rung (a journal-first thread's twin: tests/thread/test_durability.py)
    store = saves(thread_dir, 3, durability="full")
    lost = json.loads(store.mirror_path.read_text(encoding="utf-8"))["seal"]
    store.primary.unlink()
    (store.history_dir / "00000003.json").unlink()
    restored = HandoffStore(thread_dir).restore()
    assert restored.source == "rebuilt"
    receipt = HandoffStore(thread_dir).save(restored.handoff)
    saved = load(receipt.path)
    assert (saved.generation, saved.parent) == (4, lost)
