"""The hooks' memory of a session: only a "resumed" line whose proof checks acknowledges its briefing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from handoff_files import HandoffStore
from handoff_files.hooks.formats import Agent
from handoff_files.thread.ackcode import code_for
from tests.ackforgery import WRONG_PROOF, copy_line, forge
from tests.hooks import documented
from tests.hooks.helpers import content, hook

AGENT: Agent = "claude-code"
UNACKNOWLEDGED = "never acknowledged its briefing of generation 1"


def _start(project: Path) -> str:
    """A session start; returns the code its briefing gives."""
    reply = hook(AGENT, documented.event(AGENT, "session_start", project, "s-1"))
    assert reply.exit_code == 0
    code = re.search(r"with the code ([A-Z2-7]{4}-[A-Z2-7]{4})", reply.stdout)
    assert code is not None
    return code.group(1)


def _stop_warning(project: Path) -> str | None:
    reply = hook(AGENT, documented.event(AGENT, "stop", project, "s-1"))
    assert reply.exit_code == 0
    return reply.stderr


def test_a_real_acknowledgement_with_the_code_is_counted(project: Path, thread: Path) -> None:
    HandoffStore(thread).save(content(1))
    HandoffStore(thread).acknowledge(code=_start(project))
    assert _stop_warning(project) is None


@pytest.mark.parametrize("proof", [pytest.param(None, id="no-proof"), pytest.param(WRONG_PROOF, id="wrong-proof")])
def test_a_hand_appended_line_claiming_the_code_does_not_acknowledge_the_briefing(
    project: Path, thread: Path, proof: str | None
) -> None:
    HandoffStore(thread).save(content(1))
    _start(project)
    forge(thread, HandoffStore(thread).restore(), proof=proof)
    warning = _stop_warning(project)
    assert warning is not None
    assert UNACKNOWLEDGED in warning


def test_a_valid_line_copied_from_another_thread_does_not_acknowledge_the_briefing(
    project: Path, thread: Path, tmp_path: Path
) -> None:
    HandoffStore(thread).save(content(1))
    _start(project)
    other = HandoffStore(tmp_path / "other")
    other.save(content(1))
    other.acknowledge(code=code_for(other.restore().handoff))  # after this session started
    copy_line(tmp_path / "other", thread)
    warning = _stop_warning(project)
    assert warning is not None
    assert UNACKNOWLEDGED in warning


def test_an_earlier_sessions_proof_given_a_new_time_does_not_acknowledge_the_briefing(
    project: Path, thread: Path
) -> None:
    HandoffStore(thread).save(content(1))
    store = HandoffStore(thread)
    store.acknowledge(code=code_for(store.restore().handoff))  # an earlier session's acknowledgement of generation 1
    earlier = store.journal.last("resumed")[0]
    assert earlier is not None
    _start(project)
    forge(thread, store.restore(), proof=earlier.extra["proof"])  # its proof, with the time of now
    warning = _stop_warning(project)
    assert warning is not None
    assert UNACKNOWLEDGED in warning
