"""The store's durability option: a journal-first save, acknowledged after one fdatasync, loses nothing acknowledged."""

from __future__ import annotations

import itertools
import json
import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from handoff_files import HandoffStore, HandoffValidationError, NoHandoffError, load
from handoff_files.cli.main import main
from handoff_files.thread.doctor import examine
from handoff_files.thread.journal import DOCUMENT, ROTATE_BYTES, ROTATE_LINES, _encode
from tests.writer_child import WriterProcess, read_thread


def _layers(step: int, pad: int = 0) -> dict[str, Any]:
    return {
        "state": {"active_tasks": [f"step {step}"], "data": {"step": step, "pad": "x" * pad}},
        "narrative": f"Did step {step}. Then more.",
        "decisions": [{"decision": f"chose {step}", "reason": "it was next"}],
        "priorities": [{"task": f"step {step + 1}", "urgency": "first"}],
        "warnings": [{"text": "mind the gap", "severity": "low"}],
    }


def _lose_files(directory: Path, generation: int) -> None:
    """What a power loss can do to a journal-first save's files: they never reached the disk."""
    (directory / "handoff.json").unlink()
    (directory / "state.json").unlink()
    (directory / "history" / f"{generation:08d}.json").unlink()


def test_a_journal_first_save_restores_like_a_full_one(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir, durability="journal")
    receipts = [store.save(_layers(step)) for step in range(3)]
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, restored.generation, restored.problems) == ("primary", 3, ())
    assert str(restored.handoff.seal) == receipts[-1].checksum
    # the files are the same files a full save writes: a person can still `cat` the primary
    assert load(thread_dir / "history" / "00000003.json") == restored.handoff


def test_the_journal_line_is_the_commit_point_when_the_files_are_lost(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir, durability="journal")
    store.save(_layers(1))
    receipt = store.save(_layers(2))
    _lose_files(thread_dir, 2)
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, restored.generation) == ("journal", 2)
    assert str(restored.handoff.seal) == receipt.checksum
    assert restored.handoff.decisions[0].decision == "chose 2"  # every layer, not a rebuilt summary
    assert any("restored from its journal line" in problem for problem in restored.problems)


def test_the_next_save_after_a_journal_restore_chains_to_the_journal_generation(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir, durability="journal")
    store.save(_layers(1))
    lost = store.save(_layers(2))
    _lose_files(thread_dir, 2)
    after = HandoffStore(thread_dir).save(_layers(3))
    assert after.generation == 3
    assert load(thread_dir / "handoff.json").parent == lost.checksum


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda doc: doc["state"]["data"].update(step=99), id="content changed"),
        pytest.param(lambda doc: doc.update(generation=7), id="generation changed"),
        pytest.param(lambda doc: doc.pop("seal"), id="seal removed"),
    ],
)
def test_a_journal_document_that_does_not_verify_is_never_restored(thread_dir: Path, damage: Any) -> None:
    store = HandoffStore(thread_dir, durability="journal")
    store.save(_layers(1))
    store.save(_layers(2))
    _lose_files(thread_dir, 2)
    # rewrite the last line with a damaged document but a correct line check: only the seal can catch it
    lines = thread_dir.joinpath("journal.jsonl").read_bytes().splitlines()
    fields = json.loads(lines[-2])  # the document line, just before the save line that commits it
    damage(fields[DOCUMENT])
    fields.pop("check")  # the private encoder makes a line whose own check passes
    lines[-2] = _encode(fields).rstrip(b"\n")
    thread_dir.joinpath("journal.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    restored = HandoffStore(thread_dir).restore()
    assert restored.generation == 1  # the older verified generation, with the loss named
    assert restored.source == "history"
    assert any("holds no usable document" in problem for problem in restored.problems)
    assert any("lost" in problem for problem in restored.problems)


def test_a_thread_with_only_an_unverifiable_journal_document_is_refused(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir, durability="journal")
    store.save(_layers(1))
    _lose_files(thread_dir, 1)
    journal = thread_dir / "journal.jsonl"
    journal.write_bytes(journal.read_bytes().replace(b'"step 1"', b'"step 9"'))
    with pytest.raises(NoHandoffError):
        HandoffStore(thread_dir).restore()


def test_huge_journal_lines_rotate_and_the_newest_generation_stays_restorable(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir, durability="journal")
    pad = ROTATE_BYTES // 12
    receipts = [store.save(_layers(step, pad)) for step in range(16)]
    assert (thread_dir / "journal.1.jsonl").exists()
    assert (thread_dir / "journal.jsonl").stat().st_size < 2 * ROTATE_BYTES
    _lose_files(thread_dir, 16)
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, str(restored.handoff.seal)) == ("journal", receipts[-1].checksum)


def test_lines_longer_than_an_eighth_of_the_rotation_size_rotate_every_eighth_save(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir, durability="journal")
    pad = ROTATE_BYTES // 4  # each save's document line is over a quarter of ROTATE_BYTES
    journal, previous = thread_dir / "journal.jsonl", thread_dir / "journal.1.jsonl"
    rotated_at = []
    for step in range(2 * ROTATE_LINES + 2):
        before = journal.stat().st_ino if journal.exists() else None
        store.save(_layers(step, pad))
        if before is not None and journal.stat().st_ino != before:
            rotated_at.append(step)
    # never past ROTATE_LINES lines of this size; yet not at every save either, as a 4 MiB bound alone would
    assert rotated_at, "the journal never rotated"
    assert all(b - a >= ROTATE_LINES - 1 for a, b in itertools.pairwise(rotated_at))
    assert journal.stat().st_size <= (ROTATE_LINES + 2) * pad * 1.1
    assert previous.exists()
    restored = HandoffStore(thread_dir).restore()
    assert restored.handoff.generation == 2 * ROTATE_LINES + 2


def test_a_torn_megabyte_line_is_cut_before_the_next_append(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir, durability="journal")
    store.save(_layers(1))
    with (thread_dir / "journal.jsonl").open("ab") as journal:
        journal.write(b'{"at": "' + b"x" * 300_000)  # a crash mid-append of a long line
    store.save(_layers(2, 1000))
    _lose_files(thread_dir, 2)
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, restored.generation) == ("journal", 2)
    assert thread_dir.joinpath("journal.jsonl").read_bytes().count(b"x" * 1000) == 1


def test_save_can_override_the_stores_durability(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir, durability="journal")
    store.save(_layers(1), durability="full")
    store.save(_layers(2))
    lines = [json.loads(line) for line in (thread_dir / "journal.jsonl").read_bytes().splitlines()]
    assert [(line["event"], DOCUMENT in line) for line in lines] == [
        ("saved", False),
        ("document", True),
        ("saved", False),
    ]
    assert HandoffStore(thread_dir).restore().generation == 2


@pytest.mark.parametrize("bad", [pytest.param("fast", id="unknown word"), pytest.param(None, id="None")])
def test_an_unknown_durability_is_refused(thread_dir: Path, bad: Any) -> None:
    with pytest.raises(HandoffValidationError, match="durability must be one of"):
        HandoffStore(thread_dir, durability=bad)
    with pytest.raises(HandoffValidationError, match="durability must be one of"):
        HandoffStore(thread_dir).save(_layers(1), durability="fsync-later")  # type: ignore[arg-type]
    assert not thread_dir.exists()


def test_the_log_names_a_journal_document_instead_of_printing_it(
    thread_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    HandoffStore(thread_dir, durability="journal").save(_layers(1, 5000))
    assert main(["log", str(thread_dir), "--json"]) == 0
    out = capsys.readouterr().out
    assert "x" * 100 not in out
    assert "whole sealed generation 1" in out


@pytest.mark.slow  # make slow: the torture kills part [journal] stays in make test
def test_sigkill_of_a_journal_first_writer_never_loses_an_acknowledged_generation(
    thread_dir: Path, tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    """Real SIGKILLs at random moments; after each, the last ACKed generation (or a later one) restores exactly."""
    rng = random.Random(5)
    newest = 0
    with (tmp_path / "writers.log").open("a") as log:
        for number in range(12):
            writer = WriterProcess(
                python,
                thread_dir,
                ["--writer", f"r{number}", "--sizes", "0,100000", "--durability", "journal"],
                subprocess_env,
                log,
            )
            assert writer.wait_first_line(timeout=60), "the writer printed nothing in 60 s"
            time.sleep(rng.uniform(0.0, 0.08))
            assert writer.kill() == -signal.SIGKILL
            restored = HandoffStore(thread_dir).restore()
            acks = writer.acks
            if acks:
                assert restored.generation >= acks[-1].generation
                if restored.generation == acks[-1].generation:
                    assert str(restored.handoff.seal) == acks[-1].checksum
            assert restored.generation >= newest
            newest = restored.generation
    assert max(read_thread(thread_dir)) <= newest
    assert not list(thread_dir.rglob(".*.tmp")), "a temp file outlived the next open"


def test_the_doctor_rewrites_lost_files_from_the_journal_line(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir, durability="journal")
    store.save(_layers(1))
    receipt = store.save(_layers(2))
    _lose_files(thread_dir, 2)
    findings = examine(HandoffStore(thread_dir))
    assert any(f.level == "error" and "survives only in its journal line" in f.what for f in findings)
    repaired = examine(HandoffStore(thread_dir), repair=True)
    assert any(f.level == "repaired" and "survives only in its journal line" in f.what for f in repaired)
    assert str(load(thread_dir / "history" / "00000002.json").seal) == receipt.checksum
    assert str(load(thread_dir / "handoff.json").seal) == receipt.checksum
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, restored.generation, restored.problems) == ("primary", 2, ())
    assert all(f.level == "ok" for f in examine(HandoffStore(thread_dir)))


def test_a_journal_first_save_line_stays_small_and_its_document_is_read_only_when_needed(thread_dir: Path) -> None:
    """The save line commits; the document line before it is parsed only when the files are behind."""
    store = HandoffStore(thread_dir, durability="journal")
    store.save(_layers(1, 300_000))
    document_line, save_line = thread_dir.joinpath("journal.jsonl").read_bytes().splitlines()
    assert len(save_line) < 1000
    assert len(document_line) > 300_000
    assert json.loads(save_line)["durability"] == "journal"


def test_a_document_line_without_its_save_line_is_not_a_commit(thread_dir: Path) -> None:
    """A crash after the document line reached the disk but before the save line: nothing was acknowledged."""
    store = HandoffStore(thread_dir, durability="journal")
    store.save(_layers(1))
    store.save(_layers(2))
    journal = thread_dir / "journal.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[:-1]))  # the last save line never made it
    _lose_files(thread_dir, 2)
    (thread_dir / "history" / "00000001.json").unlink()  # generation 1's files are gone too
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, restored.generation) == ("journal", 1)  # found past the uncommitted document


def test_a_save_line_whose_document_line_was_torn_does_not_hide_the_save_before_it(thread_dir: Path) -> None:
    """A crash mid-write can keep the short save line and lose the long document line before it.

    That save was never acknowledged (its fdatasync never returned); the one before it was, and
    must come back. Found by the power-loss model (zero-filled blocks inside the unsynced write).
    """
    store = HandoffStore(thread_dir, durability="journal")
    store.save(_layers(1))
    acknowledged = store.save(_layers(2))
    store.save(_layers(3))
    journal = thread_dir / "journal.jsonl"
    lines = journal.read_bytes().split(b"\n")
    lines[-3] = b"\0" * len(lines[-3])  # generation 3's document line, as a torn write leaves it
    journal.write_bytes(b"\n".join(lines))
    for generation in (2, 3):
        (thread_dir / "history" / f"{generation:08d}.json").unlink()
    (thread_dir / "handoff.json").write_bytes(b"\0" * 100)
    (thread_dir / "state.json").unlink()
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, str(restored.handoff.seal)) == ("journal", acknowledged.checksum)
    assert any("generation 3 holds no usable document" in problem for problem in restored.problems)
    assert examine(HandoffStore(thread_dir), repair=True)
    assert HandoffStore(thread_dir).restore().generation == 2
