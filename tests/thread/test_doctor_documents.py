"""doctor holds each journal-first save's document line to its seal: the line's own check does not cover the document,
so a document damaged after its save is found, named by line and generation, and said to be lost or not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import handoff_files.thread.journal as journal_module
from handoff_files import HandoffStore
from handoff_files.thread.doctor import Finding, examine, failed


def saved(thread_dir: Path, n: int = 3) -> HandoffStore:
    store = HandoffStore(thread_dir)  # the default durability: journal-first, a document line per save
    for i in range(1, n + 1):
        store.save({"narrative": f"Step {i} done.", "priorities": [{"task": f"step {i + 1}", "urgency": "first"}]})
    return store


def damage_document(store: HandoffStore, generation: int, journal: Path | None = None) -> int:
    """Change one character of generation *generation*'s narrative inside its document line; return the line's number.

    The line stays valid JSON and keeps its check (which does not cover the document): only the seal can tell.
    """
    journal = journal or store.journal.path
    lines = journal.read_bytes().split(b"\n")
    index = next(i for i, line in enumerate(lines) if f'"event":"document","generation":{generation},'.encode() in line)
    assert lines[index].count(f"Step {generation} done.".encode()) == 1
    lines[index] = lines[index].replace(f"Step {generation} done.".encode(), f"Stop {generation} done.".encode())
    journal.write_bytes(b"\n".join(lines))
    return index + 1


def about(findings: list[Finding], text: str) -> list[Finding]:
    return [f for f in findings if text in f.what]


@pytest.mark.parametrize(
    ("generation", "copies"),
    [
        pytest.param(2, ["history/00000002.json"], id="older"),
        pytest.param(3, ["history/00000003.json", "handoff.json"], id="newest"),
    ],
)
def test_a_document_that_does_not_match_its_seal_is_an_error_naming_line_generation_and_copy(
    thread_dir: Path, generation: int, copies: list[str]
) -> None:
    store = saved(thread_dir)
    number = damage_document(store, generation)
    findings = examine(HandoffStore(thread_dir))
    [finding] = about(findings, f"journal.jsonl line {number}:")
    assert finding.level == "error"
    assert finding.kind == "journal"
    assert f"generation {generation}" in finding.what
    assert "seal" in finding.what
    assert "not lost" in finding.what
    assert any(copy in finding.what for copy in copies)
    assert "--repair" in finding.advice
    assert failed(findings)
    # nothing else is wrong: the files all verify
    assert [f for f in findings if f.level != "ok"] == [finding]


def test_repair_sets_a_damaged_document_line_aside_and_the_thread_then_checks_clean(thread_dir: Path) -> None:
    store = saved(thread_dir)
    number = damage_document(store, 2)
    line = store.journal.path.read_bytes().split(b"\n")[number - 1]
    findings = examine(HandoffStore(thread_dir), repair=True)
    assert not failed(findings), findings
    [finding] = about(findings, f"journal.jsonl line {number}:")
    assert finding.level == "repaired"
    [kept] = thread_dir.glob("journal.damaged-*.jsonl")
    assert kept.name in finding.advice
    assert kept.read_bytes() == line + b"\n"  # kept byte for byte, never deleted
    assert line not in store.journal.path.read_bytes()
    after = examine(HandoffStore(thread_dir))
    assert {f.level for f in after} == {"ok"}, after
    restored = HandoffStore(thread_dir).restore()
    assert (restored.generation, restored.problems) == (3, ())


def test_document_lines_in_the_rotated_journal_are_checked_and_set_aside_beside_it(
    thread_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kept generation's damaged document is not lost; a pruned one's is not called lost either."""
    monkeypatch.setattr(journal_module, "ROTATE_BYTES", 0)  # rotate every few saves, not every 4 MiB
    store = saved(thread_dir, 12)  # history/ keeps the last 10: generations 1 and 2 were pruned
    older = store.journal.previous
    assert b'"event":"document","generation":9,' in older.read_bytes()
    pruned, kept = damage_document(store, 1, older), damage_document(store, 9, older)
    findings = examine(HandoffStore(thread_dir))
    [on_kept] = about(findings, f"journal.1.jsonl line {kept}:")
    assert on_kept.level == "error"
    assert "generation 9" in on_kept.what
    assert "not lost: history/00000009.json holds generation 9" in on_kept.what
    [on_pruned] = about(findings, f"journal.1.jsonl line {pruned}:")
    assert on_pruned.level == "error"
    assert "generation 1 " in on_pruned.what
    assert "not lost: it was pruned on purpose" in on_pruned.what
    repaired = examine(HandoffStore(thread_dir), repair=True)
    assert not failed(repaired), repaired
    [aside] = thread_dir.glob("journal.1.damaged-*.jsonl")
    assert b"Stop 1 done." in aside.read_bytes()
    assert b"Stop 9 done." in aside.read_bytes()
    assert {f.level for f in examine(HandoffStore(thread_dir))} == {"ok"}


def test_intact_document_lines_raise_no_finding(thread_dir: Path) -> None:
    saved(thread_dir)
    HandoffStore(thread_dir, durability="full").save({"narrative": "Step 4 done."})  # a full save has no document line
    findings = examine(HandoffStore(thread_dir))
    assert {f.level for f in findings} == {"ok"}, findings
    assert not about(findings, "document")


def lose_newest_files(store: HandoffStore) -> None:
    """A crash after generation 3's commit point, before its files: only its journal line holds it."""
    (store.history_dir / "00000003.json").unlink()
    store.primary.write_bytes((store.history_dir / "00000002.json").read_bytes())


def test_the_newest_generations_damaged_document_with_no_other_copy_is_reported_lost(thread_dir: Path) -> None:
    store = saved(thread_dir)
    lose_newest_files(store)
    number = damage_document(store, 3)
    [finding] = about(examine(HandoffStore(thread_dir)), f"journal.jsonl line {number}:")
    assert finding.level == "error"
    assert "generation 3" in finding.what
    assert "lost" in finding.what
    assert "not lost" not in finding.what
    line = store.journal.path.read_bytes().split(b"\n")[number - 1]
    repaired = examine(HandoffStore(thread_dir), repair=True)
    assert failed(repaired)
    [finding] = about(repaired, f"journal.jsonl line {number}:")
    assert finding.level == "unrepaired"  # set aside, kept: but no verified copy of generation 3 is left
    [kept] = thread_dir.glob("journal.damaged-*.jsonl")
    assert kept.name in finding.advice
    assert kept.read_bytes() == line + b"\n"


def handoff(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handoff_files", *argv], capture_output=True, text=True, check=False, env=env
    )


def test_the_command_reports_a_damaged_document_line_and_repair_clears_it(
    thread_dir: Path, subprocess_env: dict[str, str]
) -> None:
    store = saved(thread_dir)
    number = damage_document(store, 2)
    done = handoff("doctor", str(thread_dir), env=subprocess_env)
    assert (done.returncode, done.stderr) == (1, ""), done.stdout
    assert f"journal.jsonl line {number}: the document of generation 2" in done.stdout
    assert "not lost" in done.stdout
    done = handoff("doctor", "--repair", str(thread_dir), env=subprocess_env)
    assert (done.returncode, done.stderr) == (0, ""), done.stdout
    assert "journal.damaged-" in done.stdout
    assert handoff("doctor", str(thread_dir), env=subprocess_env).returncode == 0


def test_the_command_says_lost_for_a_damaged_only_copy(thread_dir: Path, subprocess_env: dict[str, str]) -> None:
    store = saved(thread_dir)
    lose_newest_files(store)
    number = damage_document(store, 3)
    done = handoff("doctor", "--repair", str(thread_dir), env=subprocess_env)
    assert (done.returncode, done.stderr) == (1, ""), done.stdout
    [line] = [line for line in done.stdout.splitlines() if f"journal.jsonl line {number}" in line]
    assert line.startswith("LOST")
    assert "generation 3" in line
    # said once, plainly: not also as a save "never acknowledged"
    assert "never acknowledged" not in done.stdout
