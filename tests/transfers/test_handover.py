"""Progressive transfer: summarize, bootstrap, terminate; killed between any two phases, it recovers consistently."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from handoff_files import HandoffStore
from handoff_files.foundation.errors import HandoffParseError, TransferRefusedError
from handoff_files.thread.layout import TRANSFERRED_NAME
from handoff_files.transfers.blobs import LocalBlobStore
from handoff_files.transfers.handover import PHASES, transfer, transferred_to

CHILD = Path(__file__).resolve().parents[1] / "transfer_child.py"


def _layers(step: int) -> dict[str, Any]:
    return {
        "state": {"data": {"step": step}},
        "narrative": f"Did step {step}.",
        "decisions": [],
        "priorities": [{"task": f"step {step + 1}", "urgency": "first"}],
        "warnings": [],
    }


@pytest.fixture
def source(tmp_path: Path) -> HandoffStore:
    """A live thread with three generations."""
    store = HandoffStore(tmp_path / "alpha")
    for step in range(1, 4):
        store.save(_layers(step))
    return store


def _assert_consistent(source: HandoffStore, target: Path) -> str:
    """The invariant: the source is live, or TRANSFERRED and pointing at a target that restores its generation."""
    record = transferred_to(source)
    if record is None:
        assert not (source.path / TRANSFERRED_NAME).exists()
        source.restore()  # still restorable, still the owner's
        return "live"
    assert Path(record["target"]) == target
    adopted = HandoffStore(target).restore().handoff
    assert adopted.lineage.adopted_from is not None
    assert adopted.lineage.adopted_from.generation == record["generation"] == source.restore().generation
    assert adopted.state == source.restore().handoff.state
    return "transferred"


def test_a_transfer_runs_its_three_phases_in_order_and_closes_the_source(source: HandoffStore, tmp_path: Path) -> None:
    heard: list[str] = []
    result = transfer(source, tmp_path / "beta", blobs=LocalBlobStore(tmp_path / "blobs"), on_phase=heard.append)
    assert heard == list(PHASES) == list(result.done)
    assert _assert_consistent(source, tmp_path / "beta") == "transferred"
    with pytest.raises(TransferRefusedError, match="transferred"):
        source.save(_layers(9))
    assert any("transferred" in problem for problem in source.restore().problems)
    assert [e.event for e in source.journal.entries()[0]][-2:] == ["exported", "transferred"]
    # the adopted thread is a live thread of its own
    assert HandoffStore(tmp_path / "beta").save(_layers(4)).generation == 2


def test_a_finished_transfer_is_idempotent_and_refuses_another_target(source: HandoffStore, tmp_path: Path) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")
    first = transfer(source, tmp_path / "beta", blobs=blobs)
    again = transfer(source, tmp_path / "beta", blobs=blobs)
    assert (again.done, again.source_generation) == ((), first.source_generation)
    with pytest.raises(TransferRefusedError, match="already transferred"):
        transfer(source, tmp_path / "gamma", blobs=blobs)
    assert not (tmp_path / "gamma").exists()


def test_a_transfer_record_with_a_duplicated_key_is_refused_not_half_read(source: HandoffStore, tmp_path: Path) -> None:
    transfer(source, tmp_path / "beta", blobs=LocalBlobStore(tmp_path / "blobs"))
    path = source.path / TRANSFERRED_NAME
    path.write_bytes(path.read_bytes().replace(b'  "target": ', b'  "target": "/elsewhere",\n  "target": ', 1))
    with pytest.raises(HandoffParseError, match="duplicate key 'target'") as caught:
        transferred_to(source)
    assert caught.value.path == str(path)
    assert isinstance(caught.value.__cause__, HandoffParseError)  # the one strict reader refused it


def test_a_transfer_into_an_occupied_target_changes_nothing(source: HandoffStore, tmp_path: Path) -> None:
    HandoffStore(tmp_path / "beta").save(_layers(7))
    with pytest.raises(TransferRefusedError, match="already holds a thread"):
        transfer(source, tmp_path / "beta", blobs=LocalBlobStore(tmp_path / "blobs"))
    assert _assert_consistent(source, tmp_path / "beta") == "live"
    assert HandoffStore(tmp_path / "beta").restore().generation == 1


@pytest.mark.parametrize("kill_after", [pytest.param(p, id=f"killed after {p}") for p in PHASES])
def test_a_transfer_killed_after_any_phase_recovers_to_a_consistent_state(
    source: HandoffStore, tmp_path: Path, python: str, subprocess_env: dict[str, str], kill_after: str
) -> None:
    target, blobs = tmp_path / "beta", tmp_path / "blobs"
    killed = subprocess.run(
        [python, str(CHILD), str(source.path), str(target), str(blobs), kill_after],
        env=subprocess_env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert killed.stdout.split()[-1] == kill_after
    expected = "transferred" if kill_after == "terminated" else "live"
    assert _assert_consistent(source, target) == expected
    # run again (a restarted agent, or `handoff` by hand): it finishes, never adopting twice
    finished = subprocess.run(
        [python, str(CHILD), str(source.path), str(target), str(blobs), "none"],
        env=subprocess_env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert finished.stdout.split()[-1] == "finished"
    assert _assert_consistent(source, target) == "transferred"
    assert HandoffStore(target).restore().generation == 1
