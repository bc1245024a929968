"""The recovery ladder: each rung reached by damaging channels on purpose; no combination returns unverified data."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from handoff_files import HandoffParseError, HandoffStore, NoHandoffError, UnsealedEditError, load
from handoff_files.thread.journal import Journal
from handoff_files.thread.mirror import primary_stamp, read_mirror
from handoff_files.thread.settings import Durability

STEPS = 4


def content(step: int) -> dict[str, Any]:
    return {
        "narrative": f"Finished step {step} of the port. The rest is routine.",
        "state": {
            "active_tasks": [f"step {step + 1}"],
            "completed_tasks": [f"step {i}" for i in range(1, step + 1)],
            "data": {"step": step},
        },
        "priorities": [{"task": f"do step {step + 1}", "urgency": "first"}],
        "warnings": [{"text": "dates are local time"}],
    }


def saved_thread(thread_dir: Path, *, durability: Durability = "journal") -> tuple[HandoffStore, list[str]]:
    store = HandoffStore(thread_dir, durability=durability)
    return store, [store.save(content(step)).checksum for step in range(1, STEPS + 1)]


def flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    at = data.index(b"routine")
    data[at] ^= 0x01
    mtime = path.stat().st_mtime
    path.write_bytes(bytes(data))
    os.utime(path, (mtime, mtime))  # bit rot: the bytes change, the mtime does not


def keep(path: Path) -> None:
    """No damage."""


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def delete(path: Path) -> None:
    path.unlink()


DAMAGE: dict[str, Callable[[Path], None]] = {"ok": keep, "truncated": truncate, "flipped": flip, "deleted": delete}


def test_primary_damaged_restores_the_same_generation_from_history(thread_dir: Path) -> None:
    store, seals = saved_thread(thread_dir)
    for damage in ("truncated", "flipped", "deleted"):
        DAMAGE[damage](store.primary)
        restored = HandoffStore(thread_dir).restore()
        assert (restored.source, restored.generation, str(restored.handoff.seal)) == ("history", len(seals), seals[-1])
        assert any("handoff.json" in p for p in restored.problems)
        seals.append(store.save(content(STEPS)).checksum)  # heal for the next damage


def test_primary_and_history_damaged_rebuilds_from_state_json_and_the_journal(thread_dir: Path) -> None:
    """A full save leaves only a summary line in the journal: the last rung rebuilds the state from it."""
    store, _ = saved_thread(thread_dir, durability="full")
    store.primary.unlink()
    for path in store.history_dir.iterdir():
        path.write_bytes(b"{")
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, restored.generation) == ("rebuilt", STEPS)
    expected = load_saved_state(STEPS)
    assert restored.handoff.state.model_dump(mode="json") == expected
    assert "Finished step 4 of the port." in restored.handoff.narrative
    assert restored.handoff.narrative.startswith("[rebuilt")
    assert [p.task for p in restored.handoff.priorities] == ["do step 5"]
    assert restored.handoff.seal is None
    assert any("rebuilt from state.json" in p and "lost" in p for p in restored.problems)


def test_primary_and_history_damaged_restores_the_exact_generation_from_its_journal_line(thread_dir: Path) -> None:
    """A journal-first save (the default) holds the whole sealed generation in its journal line."""
    store, seals = saved_thread(thread_dir)
    store.primary.unlink()
    for path in store.history_dir.iterdir():
        path.write_bytes(b"{")
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, restored.generation, str(restored.handoff.seal)) == ("journal", STEPS, seals[-1])
    assert restored.handoff.content().model_dump(mode="json")["narrative"] == content(STEPS)["narrative"]
    assert any("restored from its journal line" in p for p in restored.problems)


def load_saved_state(step: int) -> dict[str, Any]:
    from handoff_files import State

    return State.model_validate(content(step)["state"]).model_dump(mode="json")


def test_state_json_damaged_is_reported_and_the_primary_still_wins(thread_dir: Path) -> None:
    store, seals = saved_thread(thread_dir)
    store.mirror_path.write_text("{}", encoding="utf-8")
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, str(restored.handoff.seal)) == ("primary", seals[-1])
    assert any("state.json" in p for p in restored.problems)


def test_a_torn_journal_tail_is_cut_before_the_next_append(thread_dir: Path) -> None:
    store, _ = saved_thread(thread_dir)
    with store.journal.path.open("ab") as handle:
        handle.write(b'{"at": "2026-11-21T00:00:00Z", "event": "sav')
    entries, problems = store.journal.entries()
    assert any("torn" in p for p in problems)
    assert HandoffStore(thread_dir).restore().source == "primary"
    store.save(content(STEPS + 1))
    entries, problems = store.journal.entries()
    assert problems == []
    assert [e.generation for e in entries if e.event == "saved"] == [1, 2, 3, 4, 5]


def test_a_damaged_line_in_the_middle_of_the_journal_is_reported_with_its_number(thread_dir: Path) -> None:
    store, _ = saved_thread(thread_dir)
    lines = store.journal.path.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b"step", b"stop", 1)
    store.journal.path.write_bytes(b"\n".join(lines))
    entries, problems = store.journal.entries()
    assert problems == ["journal.jsonl line 2 is damaged (its check does not match)"]
    assert len(entries) == 2 * STEPS - 1  # a journal-first save writes a document line before its save line
    last, skipped = store.journal.last("saved")
    assert last is not None
    assert last.generation == STEPS
    assert skipped == []  # the newest line is whole: a restore does not walk back to the damage


def test_journal_rotates_and_the_last_save_is_still_found_across_files(
    thread_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import handoff_files.thread.journal as journal_module

    monkeypatch.setattr(journal_module, "ROTATE_BYTES", 2_000)
    # full saves write short lines, so the byte bound rules (journal-first rotation: tests/thread/test_durability.py)
    store, _ = saved_thread(thread_dir, durability="full")
    for step in range(STEPS + 1, STEPS + 30):
        store.save(content(step))
    assert (thread_dir / "journal.1.jsonl").exists()
    assert store.journal.path.stat().st_size < 4_000
    last, _ = Journal(thread_dir).last("saved")
    assert last is not None
    assert last.generation == STEPS + 29
    assert HandoffStore(thread_dir).restore().generation == STEPS + 29


def test_an_unsealed_edit_is_reported_and_the_caller_chooses(thread_dir: Path) -> None:
    store, seals = saved_thread(thread_dir)
    text = store.primary.read_text(encoding="utf-8").replace("The rest is routine.", "A person added this.")
    store.primary.write_text(text, encoding="utf-8")
    later = load(store.history_dir / f"{STEPS:08d}.json").created_at.timestamp() + 60
    os.utime(store.primary, (later, later))
    with pytest.raises(UnsealedEditError):
        load(store.primary, written=primary_stamp(store.mirror_path))  # the thread's record tells the edit
    kept = HandoffStore(thread_dir).restore()
    assert (kept.source, str(kept.handoff.seal)) == ("history", seals[-1])
    assert any("edited after sealing" in p for p in kept.problems)
    accepted = HandoffStore(thread_dir).restore(accept_edit=True)
    assert (accepted.source, accepted.generation) == ("primary", STEPS + 1)
    assert "A person added this." in accepted.handoff.narrative
    assert accepted.handoff.parent == seals[-1]


def test_acknowledge_writes_the_resumed_line_and_notes_the_restore_in_state_json(thread_dir: Path) -> None:
    store, _ = saved_thread(thread_dir)
    restored = HandoffStore(thread_dir).restore()
    HandoffStore(thread_dir).acknowledge(restored)
    last, _ = store.journal.last("resumed")
    assert last is not None
    assert last.generation == STEPS
    assert f"resumed from generation {STEPS}" in last.summary
    mirror = json.loads(store.mirror_path.read_text(encoding="utf-8"))
    assert mirror["last_restore"]["generation"] == STEPS
    assert HandoffStore(thread_dir).restore().problems == ()


@pytest.mark.parametrize(
    ("primary", "newest_history", "mirror", "journal"),
    list(itertools.product(DAMAGE, DAMAGE, ["ok", "truncated", "deleted"], ["ok", "truncated", "deleted"])),
)
def test_no_combination_of_damage_returns_unverified_data(
    thread_dir: Path, primary: str, newest_history: str, mirror: str, journal: str
) -> None:
    store, seals = saved_thread(thread_dir)
    DAMAGE[primary](store.primary)
    DAMAGE[newest_history](store.history_dir / f"{STEPS:08d}.json")
    DAMAGE[mirror](store.mirror_path)
    DAMAGE[journal](store.journal.path)
    try:
        restored = HandoffStore(thread_dir).restore()
    except NoHandoffError:
        return
    if restored.source == "rebuilt":
        assert restored.handoff.state.model_dump(mode="json") == load_saved_state(restored.generation)
        assert mirror == "ok"
    else:
        assert str(restored.handoff.seal) == seals[restored.generation - 1]
        assert (
            restored.handoff.content().model_dump(mode="json")["narrative"] == content(restored.generation)["narrative"]
        )
    # a damaged channel a restore reads is always reported (history copies are checked by the doctor)
    if (primary, mirror, journal) != ("ok", "ok", "ok"):
        assert restored.problems
    else:
        assert (restored.source, restored.problems) == ("primary", ())
    # a lost generation is named whenever any trace of it survives
    trace = primary in ("truncated", "flipped") or newest_history != "deleted" or "ok" in (mirror, journal)
    if restored.generation < STEPS and trace:
        assert any("lost" in p for p in restored.problems), restored.problems


def test_a_state_json_with_a_duplicated_key_is_refused_naming_the_file(thread_dir: Path) -> None:
    """A lenient reader keeps the last of two keys (and the check still matches): the strict reader refuses it."""
    store, seals = saved_thread(thread_dir)
    data = store.mirror_path.read_bytes()
    store.mirror_path.write_bytes(data.replace(b'  "generation": 4,', b'  "generation": 4,\n  "generation": 4,', 1))
    with pytest.raises(HandoffParseError, match="duplicate key 'generation'") as caught:
        read_mirror(store.mirror_path)
    assert caught.value.path == str(store.mirror_path)
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, str(restored.handoff.seal)) == ("primary", seals[-1])
    assert any("state.json" in p and "duplicate key" in p for p in restored.problems)


def test_a_journal_line_with_a_duplicated_key_is_a_damaged_line(thread_dir: Path) -> None:
    store, _ = saved_thread(thread_dir)
    lines = store.journal.path.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b'"event":"saved"', b'"event":"saved","event":"saved"', 1)
    store.journal.path.write_bytes(b"\n".join(lines))
    entries, problems = store.journal.entries()
    assert problems == ["journal.jsonl line 2 is damaged (its check does not match)"]
    assert len(entries) == 2 * STEPS - 1  # a journal-first save writes a document line before its save line


def test_the_journal_check_names_each_problem_by_kind_and_cuts_only_the_torn_tail(thread_dir: Path) -> None:
    store, _ = saved_thread(thread_dir)
    lines = store.journal.path.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b"step", b"stop", 1)
    store.journal.path.write_bytes(b"\n".join(lines) + b'{"at": "2026-11-21T00:00:00Z", "event": "sav')
    _, problems = store.journal.check()
    assert [(p.kind, p.line) for p in problems] == [("damaged", 2), ("torn", None)]
    assert store.journal.cut_torn_tails() == [store.journal.path]
    assert store.journal.cut_torn_tails() == []
    _, problems = store.journal.check()
    assert [(p.kind, p.line) for p in problems] == [("damaged", 2)]
