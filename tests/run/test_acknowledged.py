"""The supervisor's acknowledgement check: only a "resumed" line whose proof checks counts as made with the code."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from handoff_files import HandoffStore, Restored
from handoff_files.run.acknowledged import AckCheck
from handoff_files.thread.ackcode import code_for
from handoff_files.thread.journal import Journal
from tests.ackforgery import SCRIPT as FORGER
from tests.ackforgery import WRONG_PROOF, copy_line, forge
from tests.writer_child import content

FORGED = "claims the code but its proof does not check"


def _saved(thread: Path, saves: int = 1) -> Restored:
    store = HandoffStore(thread)
    for step in range(1, saves + 1):
        store.save(content("w", step, 0))
    return store.restore()


def _check(thread: Path, restored: Restored, *, require_code: bool) -> tuple[AckCheck, list[str]]:
    told: list[str] = []
    return AckCheck(Journal(thread), restored, told.append, require_code=require_code), told


def test_a_real_acknowledgement_with_the_code_counts_with_the_code(thread_dir: Path) -> None:
    restored = _saved(thread_dir)
    check, told = _check(thread_dir, restored, require_code=True)
    HandoffStore(thread_dir).acknowledge(restored, code=code_for(restored.handoff))
    assert check.arrived()
    assert check.with_code
    assert told == ["the agent acknowledged its context: resumed from generation 1 with the code"]


@pytest.mark.parametrize("proof", [pytest.param(None, id="no-proof"), pytest.param(WRONG_PROOF, id="wrong-proof")])
def test_a_hand_appended_line_claiming_the_code_never_counts_when_the_code_is_required(
    thread_dir: Path, proof: str | None
) -> None:
    restored = _saved(thread_dir)
    check, told = _check(thread_dir, restored, require_code=True)
    forge(thread_dir, restored, proof=proof)
    assert not check.arrived()
    assert not check.with_code
    assert len(told) == 1
    assert FORGED in told[0]
    assert "not counted" in told[0]


def test_a_forged_line_counts_only_as_an_acknowledgement_without_the_code(thread_dir: Path) -> None:
    restored = _saved(thread_dir)
    check, told = _check(thread_dir, restored, require_code=False)
    forge(thread_dir, restored)
    assert check.arrived()
    assert not check.with_code
    assert FORGED in told[0]
    assert "counted as acknowledged without the code" in told[0]


def test_a_valid_line_copied_from_another_thread_does_not_count_with_the_code(tmp_path: Path) -> None:
    other = _saved(tmp_path / "other")
    HandoffStore(tmp_path / "other").acknowledge(other, code=code_for(other.handoff))
    restored = _saved(tmp_path / "thread-1")
    check, told = _check(tmp_path / "thread-1", restored, require_code=True)
    copy_line(tmp_path / "other", tmp_path / "thread-1")
    assert not check.arrived()
    assert FORGED in told[0]


def test_a_valid_proof_moved_to_a_newer_generation_does_not_count_with_the_code(thread_dir: Path) -> None:
    first = _saved(thread_dir)
    HandoffStore(thread_dir).acknowledge(first, code=code_for(first.handoff))
    last, _ = Journal(thread_dir).last("resumed")
    assert last is not None
    restored = _saved(thread_dir)  # generation 2
    check, told = _check(thread_dir, restored, require_code=True)
    forge(thread_dir, restored, proof=last.extra["proof"])
    assert not check.arrived()
    assert FORGED in told[0]


def test_handoff_run_require_code_refuses_an_agent_that_forges_its_acknowledgement(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    thread = tmp_path / "t1"
    _saved(thread)
    command = [python, "-m", "handoff_files", "run", str(thread), "--require-code", "--json", "--ack-timeout", "30"]
    done = subprocess.run(
        [*command, "--", python, str(FORGER), "wrong-proof", "5"],
        env={**subprocess_env, "HANDOFF_DIR": str(thread)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert (
        f"{FORGED} (written by hand, or copied from another thread, generation or moment): not counted" in done.stderr
    )
    assert "with the code" not in done.stderr.replace("claims the code", "")


def test_an_earlier_starts_line_copied_after_the_start_does_not_count_with_the_code(thread_dir: Path) -> None:
    """A byte-for-byte copy of an older acknowledgement of the same generation: its proof checks, its time is old."""
    restored = _saved(thread_dir)
    store = HandoffStore(thread_dir)
    store.acknowledge(restored, code=code_for(restored.handoff))  # an earlier start's
    store.acknowledge(restored)  # and a later one's, without the code: the newest line before this start
    time.sleep(1.1)  # older than the start by more than the clocks' slack
    check, told = _check(thread_dir, restored, require_code=True)
    old = [line for line in (thread_dir / "journal.jsonl").read_bytes().splitlines(keepends=True) if b'"right"' in line]
    with (thread_dir / "journal.jsonl").open("ab") as journal:
        journal.write(old[-1])
    assert not check.arrived()
    assert "written before this start" in told[0]
