"""A generation committed only to the journal (its writer killed after the commit) gets its history/ copy back.

Nothing else rewrites it: before this, a rotation dropped it for good (48 of 1,278 generations in
one kill run).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from handoff_files import HandoffStore, load
from handoff_files.thread import copyback
from handoff_files.thread import journal as journal_module
from handoff_files.thread.catchup import catch_up
from handoff_files.thread.journal import Journal
from tests.writer_child import content

# a journal-first save SIGKILLed just after its commit point (the journal line is durable) and
# before any of its copies: history/, the primary and state.json still show the generation before
_KILLED_AFTER_JOURNAL_COMMIT = """
import os, signal, sys
from handoff_files import HandoffStore
from handoff_files.thread import commit
from tests.writer_child import content

def killed(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

commit.write_durable = killed
HandoffStore(sys.argv[1], durability="journal").save(content("killed", 1, 0))
"""


def _killed_after_commit(thread: Path, python: str, env: dict[str, str]) -> str:
    """Save generation 1, then generation 2 in a writer killed after its journal commit; its seal."""
    HandoffStore(thread, durability="journal").save(content("alive", 1, 0))
    killed = subprocess.run([python, "-c", _KILLED_AFTER_JOURNAL_COMMIT, str(thread)], env=env, check=False)
    assert killed.returncode == -9
    assert not (thread / "history" / "00000002.json").exists()
    committed, document = next(Journal(thread).committed_documents())
    assert (committed.generation, document is not None) == (2, True)
    assert committed.seal is not None
    return committed.seal


def test_a_rotation_first_copies_back_a_generation_only_in_the_lines_it_drops(
    thread_dir: Path, python: str, subprocess_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seal = _killed_after_commit(thread_dir, python, subprocess_env)
    # every append rotates: the second drops the lines that hold generation 2; no save runs meanwhile
    monkeypatch.setattr(journal_module, "ROTATE_BYTES", 0)
    monkeypatch.setattr(journal_module, "ROTATE_LINES", 0)
    store = HandoffStore(thread_dir, durability="journal")
    for _ in range(3):
        with store.locked():
            store.journal.append("hook", generation=None, seal=None, summary="a session started")
    assert not any(entry.generation == 2 for entry, _ in Journal(thread_dir).committed_documents())
    copy = load(thread_dir / "history" / "00000002.json")
    assert str(copy.seal) == seal
    restored = HandoffStore(thread_dir).restore()
    assert (restored.generation, restored.source) == (2, "history")


def test_the_next_save_copies_back_a_generation_only_in_the_journal(
    thread_dir: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    seal = _killed_after_commit(thread_dir, python, subprocess_env)
    receipt = HandoffStore(thread_dir, durability="journal").save(content("alive", 2, 0))
    assert receipt.generation == 3
    assert str(load(thread_dir / "history" / "00000002.json").seal) == seal
    assert any("generation 2 was only in the journal" in problem for problem in receipt.problems)


def _rotate_every_append(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal_module, "ROTATE_BYTES", 0)
    monkeypatch.setattr(journal_module, "ROTATE_LINES", 0)


def test_a_rotation_over_exact_copies_decodes_nothing(thread_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the usual rotation: every generation in the dropped lines has its history/ copy, byte for byte
    # as the save wrote it; telling that is a byte comparison, not a parse and a seal check of both
    store = HandoffStore(thread_dir, durability="journal")
    for i in range(3):
        store.save(content("alive", i + 1, 0))
    decoded: list[object] = []

    def read(*args: object, **kwargs: object) -> None:
        decoded.append(args)
        pytest.fail("a copy was decoded or loaded")

    monkeypatch.setattr(copyback, "decode", read)
    monkeypatch.setattr(copyback, "load", read)
    _rotate_every_append(monkeypatch)
    for _ in range(2):
        with store.locked():
            store.journal.append("hook", generation=None, seal=None, summary="a session started")
    assert decoded == []


def test_a_rotation_rewrites_a_damaged_copy_from_the_lines_it_drops(
    thread_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = HandoffStore(thread_dir, durability="journal")
    receipts = [store.save(content("alive", i + 1, 0)) for i in range(3)]
    copy = thread_dir / "history" / "00000002.json"
    data = bytearray(copy.read_bytes())
    data[data.index(b"alive")] ^= 0x20  # one bit flipped inside the narrative: no longer the save's bytes
    copy.write_bytes(bytes(data))
    _rotate_every_append(monkeypatch)
    for _ in range(2):
        with store.locked():
            store.journal.append("hook", generation=None, seal=None, summary="a session started")
    assert str(load(copy).seal) == receipts[1].checksum


def test_a_damaged_copy_is_written_again_under_its_own_name_and_kept_aside(tmp_path: Path) -> None:
    # a YAML thread's copy, mended by a reader that asks for JSON (a saver's catch-up does): once it
    # was written beside the damaged one as 00000002.json, leaving two files of one generation
    store = HandoffStore(tmp_path / "thread", agent_id="agent", format="yaml")
    store.save({"narrative": "one"})
    store.save({"narrative": "two"})
    copy = tmp_path / "thread" / "history" / "00000002.yaml"
    good = copy.read_bytes()
    copy.write_bytes(good[: len(good) // 2])  # as a power loss leaves an unflushed copy
    notes = catch_up(store.layout, "json")
    assert len(notes) == 1
    assert "00000002.yaml did not verify" in notes[0]
    assert copy.read_bytes() == good
    names = sorted(path.name for path in copy.parent.iterdir())
    assert "00000002.json" not in names
    kept = [name for name in names if name.startswith("damaged-")]
    assert len(kept) == 1
    assert kept[0].endswith("-00000002.yaml")
