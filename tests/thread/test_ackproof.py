"""Acknowledgement proofs: the library's "resumed" line proves the code; a folder writer's does not."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from handoff_files import HandoffStore
from handoff_files.foundation.secret import KEY_ENV
from handoff_files.thread.ackcode import code_for
from handoff_files.thread.ackproof import SLACK, claim
from handoff_files.thread.journal import Entry, Journal
from tests.ackforgery import WRONG_PROOF, copy_line, forge
from tests.writer_child import content


def _acknowledged(thread: Path, saves: int = 1) -> HandoffStore:
    store = HandoffStore(thread)
    for step in range(1, saves + 1):
        store.save(content("w", step, 0))
    store.acknowledge(code=code_for(store.restore().handoff))
    return store


def _newest_resumed(thread: Path) -> Entry:
    last, _ = Journal(thread).last("resumed")
    assert last is not None
    return last


def test_the_librarys_line_with_the_code_carries_a_proof_that_checks(thread_dir: Path) -> None:
    _acknowledged(thread_dir)
    line = _newest_resumed(thread_dir)
    assert len(line.extra["proof"]) == 64
    assert claim(line, thread_id="thread-1") == "proven"


def test_a_line_without_the_code_claims_nothing_and_carries_no_proof(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir)
    store.save(content("w", 1, 0))
    store.acknowledge()
    line = _newest_resumed(thread_dir)
    assert "proof" not in line.extra
    assert claim(line, thread_id="thread-1") == "none"


@pytest.mark.parametrize("proof", [pytest.param(None, id="no-proof"), pytest.param(WRONG_PROOF, id="wrong-proof")])
def test_a_hand_appended_line_claiming_the_code_is_forged(thread_dir: Path, proof: str | None) -> None:
    store = HandoffStore(thread_dir)
    store.save(content("w", 1, 0))
    forge(thread_dir, store.restore(), proof=proof)
    assert claim(_newest_resumed(thread_dir), thread_id="thread-1") == "forged"


def test_a_proof_copied_from_another_thread_does_not_check(tmp_path: Path) -> None:
    _acknowledged(tmp_path / "other")
    HandoffStore(tmp_path / "thread-1").save(content("w", 1, 0))
    copy_line(tmp_path / "other", tmp_path / "thread-1")
    assert claim(_newest_resumed(tmp_path / "thread-1"), thread_id="thread-1") == "forged"


def test_a_proof_moved_to_another_generation_or_moment_does_not_check(thread_dir: Path) -> None:
    store = _acknowledged(thread_dir)
    proof = _newest_resumed(thread_dir).extra["proof"]
    store.save(content("w", 2, 0))
    forge(thread_dir, store.restore(), proof=proof)  # generation 2's seal, generation 1's proof
    assert claim(_newest_resumed(thread_dir), thread_id="thread-1") == "forged"
    store = HandoffStore(thread_dir)
    restored = store.restore()
    store.acknowledge(code=code_for(restored.handoff))
    proof = _newest_resumed(thread_dir).extra["proof"]
    forge(thread_dir, restored, proof=proof)  # the same generation, a later time
    assert claim(_newest_resumed(thread_dir), thread_id="thread-1") == "forged"


def test_a_proof_made_under_another_key_does_not_check(
    thread_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _acknowledged(thread_dir)
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "another.key"))
    assert claim(_newest_resumed(thread_dir), thread_id="thread-1") == "forged"


def test_a_proven_line_older_than_the_watched_start_is_replayed(thread_dir: Path) -> None:
    _acknowledged(thread_dir)
    line = _newest_resumed(thread_dir)
    written = dt.datetime.fromisoformat(line.at)
    assert claim(line, thread_id="thread-1", since=written) == "proven"
    assert claim(line, thread_id="thread-1", since=written + SLACK) == "proven"  # clocks step
    assert claim(line, thread_id="thread-1", since=written + SLACK + dt.timedelta(seconds=1)) == "replayed"
