"""Checkpoint files written by this release load in later ones (golden files); a newer format is refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from handoff_files import HandoffStore, UnsupportedVersionError
from handoff_files.langgraph import HandoffSaver
from handoff_files.langgraph.store import AGENT_ID, FORMAT
from tests.langgraph.graph_app import build, summary

GOLDEN = Path(__file__).resolve().parent.parent.parent / "samples" / "langgraph"


def test_the_golden_thread_written_by_the_first_release_loads_with_its_state_and_history(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    shutil.copytree(GOLDEN, root)  # never touch the committed files
    graph = build(HandoffSaver(root))
    expected = json.loads((GOLDEN / "expected.json").read_text(encoding="utf-8"))
    got = json.loads(json.dumps(summary(graph, {"configurable": {"thread_id": "golden-1"}}), default=str))
    assert got == expected
    assert len(expected["history"]) == 11  # every checkpoint of the root namespace, oldest to newest


def test_a_checkpoint_of_a_newer_format_is_refused_with_the_typed_error(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    record = {
        "format": FORMAT + 1,
        "thread_id": "t",
        "checkpoint_ns": "",
        "checkpoint_id": "1",
        "parent_checkpoint_id": None,
        "metadata": {"json": {}},
        "checkpoint": {"json": {"v": 1, "id": "1", "ts": "", "channel_versions": {}, "versions_seen": {}}},
        "channel_values": {},
    }
    HandoffStore(root / "t", agent_id=AGENT_ID).save({"state": {"data": {"langgraph": record}}})
    with pytest.raises(UnsupportedVersionError, match="newer than this release"):
        HandoffSaver(root).get_tuple({"configurable": {"thread_id": "t"}})
