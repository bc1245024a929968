"""doctor --repair: a damaged copy is rewritten from a verified one, a damaged journal line is set aside, and the
repaired thread then checks clean; a repair that fails leaves everything already saved as it was."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

import handoff_files.foundation.atomic as atomic_module
from handoff_files import HandoffStore, load
from handoff_files.thread.doctor import Finding, examine, failed
from handoff_files.thread.journal import Journal


def saved(thread_dir: Path, n: int = 3, **options: object) -> HandoffStore:
    store = HandoffStore(thread_dir, **options)  # type: ignore[arg-type]
    for i in range(1, n + 1):
        store.save(
            {
                "narrative": f"Step {i} done. Then more.",
                "state": {"active_tasks": [f"step {i + 1}"], "data": {"step": i, "ratio": i / 3}},
                "priorities": [{"task": f"step {i + 1}", "urgency": "first"}],
                "warnings": [{"text": "mind the gap", "severity": "low"}],
            }
        )
    return store


def levels(findings: list[Finding]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in findings:
        out.setdefault(f.level, []).append(f"{f.what} — {f.advice}")
    return out


def snapshot(thread_dir: Path) -> dict[str, bytes]:
    """Every file of the thread but the writers' lock (which notes who holds it), by its path inside it."""
    files = (p for p in sorted(thread_dir.rglob("*")) if p.is_file() and p.name != ".lock")
    return {str(p.relative_to(thread_dir)): p.read_bytes() for p in files}


def assert_clean(thread_dir: Path) -> None:
    found = levels(examine(HandoffStore(thread_dir)))
    assert set(found) == {"ok"}, found


# -- a damaged history copy -------------------------------------------------------------------


def test_a_truncated_history_copy_is_one_error_not_a_lost_generation(thread_dir: Path) -> None:
    """The primary still verifies generation 3: nothing is lost, and nothing says so."""
    store = saved(thread_dir)
    os.truncate(store.history_dir / "00000003.json", 100)
    findings = examine(HandoffStore(thread_dir))
    found = levels(findings)
    assert not any("survives only" in what or "lost" in what for what in found.get("error", []))
    [error] = found["error"]
    assert "history/00000003.json" in error
    assert "--repair" in error
    assert "handoff.json verifies: generation 3" in " ".join(found["ok"])


def test_repair_rewrites_a_truncated_history_copy_from_the_verified_primary(thread_dir: Path) -> None:
    store = saved(thread_dir)
    copy = store.history_dir / "00000003.json"
    written = copy.read_bytes()
    os.truncate(copy, 100)
    damaged = copy.read_bytes()
    findings = examine(HandoffStore(thread_dir), repair=True)
    assert not failed(findings), levels(findings)
    assert any(f.level == "repaired" and "00000003.json" in f.what for f in findings)
    assert copy.read_bytes() == written  # byte for byte what the save wrote
    [kept] = store.history_dir.glob("*-00000003.json")
    assert kept.read_bytes() == damaged  # the damaged copy is kept, never deleted
    last, _ = store.journal.last("repaired")
    assert last is not None
    assert "00000003.json" in last.summary
    assert_clean(thread_dir)
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, restored.generation, restored.problems) == ("primary", 3, ())


def test_repair_rewrites_a_damaged_older_copy_from_the_journal_first_line(thread_dir: Path) -> None:
    store = saved(thread_dir, durability="journal")
    copy = store.history_dir / "00000002.json"
    written = copy.read_bytes()
    copy.write_bytes(written.replace(b"Step 2", b"Stop 2"))
    assert failed(examine(HandoffStore(thread_dir)))
    assert not failed(examine(HandoffStore(thread_dir), repair=True))
    assert copy.read_bytes() == written
    assert_clean(thread_dir)


def test_a_yaml_history_copy_is_rewritten_as_the_save_wrote_it(thread_dir: Path) -> None:
    store = saved(thread_dir, format="yaml")
    copy = store.history_dir / "00000003.yaml"
    written = copy.read_bytes()
    copy.write_bytes(written[:50])
    assert not failed(examine(HandoffStore(thread_dir), repair=True))
    assert copy.read_bytes() == written
    assert_clean(thread_dir)


def test_a_deleted_history_folder_is_reported_and_the_newest_copy_rebuilt(thread_dir: Path) -> None:
    store = saved(thread_dir)
    written = (store.history_dir / "00000003.json").read_bytes()
    for path in store.history_dir.iterdir():
        path.unlink()
    store.history_dir.rmdir()
    found = levels(examine(HandoffStore(thread_dir)))
    assert any("history/00000003.json is missing" in what for what in found["error"])
    assert not failed(examine(HandoffStore(thread_dir), repair=True))
    assert (store.history_dir / "00000003.json").read_bytes() == written
    assert_clean(thread_dir)


def test_a_journal_first_thread_whose_newest_copy_is_missing_is_rebuilt_as_saved(thread_dir: Path) -> None:
    store = saved(thread_dir, durability="journal")
    copy = store.history_dir / "00000003.json"
    written = copy.read_bytes()
    copy.unlink()
    found = levels(examine(HandoffStore(thread_dir)))
    assert not any("survives only in state.json" in what for what in found["error"]), found
    assert any("00000003.json" in what for what in found["error"])
    assert not failed(examine(HandoffStore(thread_dir), repair=True))
    assert copy.read_bytes() == written
    assert_clean(thread_dir)


def test_a_damaged_state_json_is_rewritten_as_the_save_wrote_it(thread_dir: Path) -> None:
    store = saved(thread_dir)
    written = store.mirror_path.read_bytes()
    store.mirror_path.write_bytes(b"garbage\n")
    assert not failed(examine(HandoffStore(thread_dir), repair=True))
    assert store.mirror_path.read_bytes() == written
    assert_clean(thread_dir)


# -- a damaged journal line -------------------------------------------------------------------


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("end", id="appended"),
        pytest.param("middle", id="in-the-middle"),
    ],
)
def test_repair_sets_a_damaged_journal_line_aside_and_the_thread_then_checks_clean(
    thread_dir: Path, where: str
) -> None:
    store = saved(thread_dir)
    good = store.journal.path.read_bytes().splitlines(keepends=True)
    if where == "end":
        store.journal.path.write_bytes(b"".join(good) + b"hello world\n")
    else:
        store.journal.path.write_bytes(b"".join([good[0], b"hello world\n", *good[1:]]))
    assert failed(examine(HandoffStore(thread_dir)))
    findings = examine(HandoffStore(thread_dir), repair=True)
    assert not failed(findings), levels(findings)
    [aside] = thread_dir.glob("journal.damaged-*.jsonl")
    assert aside.read_bytes() == b"hello world\n"  # kept, never deleted
    assert any(f.level == "repaired" and aside.name in f.advice for f in findings)
    lines = store.journal.path.read_bytes().splitlines(keepends=True)
    assert lines[: len(good)] == good  # every good line kept, byte for byte
    entries, problems = Journal(thread_dir).check()
    assert problems == []
    assert [e.event for e in entries] == ["document", "saved"] * 3 + ["repaired"]  # journal-first saves
    assert_clean(thread_dir)


def test_a_damaged_line_of_the_rotated_journal_is_set_aside_too(thread_dir: Path) -> None:
    store = saved(thread_dir)
    store.journal.path.rename(store.journal.previous)
    store.journal.previous.write_bytes(store.journal.previous.read_bytes() + b"{}\n")
    assert not failed(examine(HandoffStore(thread_dir), repair=True))
    [aside] = thread_dir.glob("journal.1.damaged-*.jsonl")
    assert aside.read_bytes() == b"{}\n"
    assert_clean(thread_dir)


# -- a repair that fails ----------------------------------------------------------------------


def test_a_failed_repair_damages_nothing_already_saved(thread_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = saved(thread_dir)
    os.truncate(store.history_dir / "00000003.json", 100)
    store.mirror_path.write_bytes(b"garbage\n")
    store.journal.path.write_bytes(store.journal.path.read_bytes() + b"hello world\n")
    before = snapshot(thread_dir)

    def refuse(source: str, target: str | os.PathLike[str]) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(atomic_module, "put_in_place", refuse)
    findings = examine(HandoffStore(thread_dir), repair=True)
    assert failed(findings)
    # the disk refused the writes: said as such, with the reason, never as data lost
    assert any(f.level == "unwritten" and "Input/output error" in f.advice for f in findings), levels(findings)
    assert "unrepaired" not in levels(findings)
    after = snapshot(thread_dir)
    assert {name: after[name] for name in before} == before  # every file as it was
    assert not [name for name in after if name.endswith(".tmp")]
    monkeypatch.undo()
    assert HandoffStore(thread_dir).restore().generation == 3
    assert not failed(examine(HandoffStore(thread_dir), repair=True))
    assert_clean(thread_dir)
    assert load(store.history_dir / "00000003.json").generation == 3


# -- a new thread, and a thread's primary file ------------------------------------------------


def test_a_freshly_initialised_thread_checks_clean(thread_dir: Path) -> None:
    HandoffStore(thread_dir).init()
    before = snapshot(thread_dir)
    findings = examine(HandoffStore(thread_dir))
    assert set(levels(findings)) == {"ok"}, levels(findings)
    assert any("no generations yet" in f.what for f in findings)
    assert not failed(examine(HandoffStore(thread_dir), repair=True))
    assert snapshot(thread_dir) == before  # nothing to repair: nothing written


def test_examine_takes_a_threads_primary_file_as_its_thread(thread_dir: Path) -> None:
    store = saved(thread_dir)
    found = levels(examine(store.primary))
    assert set(found) == {"ok"}
    assert "handoff.json verifies: generation 3" in " ".join(found["ok"])
