"""The goals bench: its verdicts say met only within a goal, and the reference model accepts a real file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from bench import bench_goals
from handoff_files import HandoffStore


def _found(scale: float) -> dict[str, Any]:
    """Samples where every one of ours is *scale* times its baseline."""
    sizes: dict[str, Any] = {}
    for label in bench_goals.SIZE_LABELS:
        base = {"put": [0.001] * 3, "write": [0.001] * 3, "get_tuple": [0.001] * 3}
        ours = {name: [0.001 * scale] * 3 for name in ("save:full", "save:journal", "load")}
        sizes[label] = {"saves": {**base, **ours}, "loads": {**base, **ours}}
    fresh = {name: [0.1] * 3 for name in ("pass", "get_tuple", "pydantic + equivalent model")}
    fresh |= {name: [0.1 * scale] * 3 for name in ("restore", "handoff --version", "handoff show")}
    return {"sizes": sizes, "fresh": fresh}


def test_every_goal_is_in_the_table_and_a_miss_says_by_how_much() -> None:
    table, verdicts = bench_goals.rows(_found(3.0), _found(1.5))
    assert len(table) == len(bench_goals.GOALS) + len(bench_goals.CLI_GOALS)
    by_goal = {(row[0], row[1]): row for row in table}
    assert by_goal["save full ÷ put", "1 KB"][5] == "met"  # 1.5x against <= 2x
    assert by_goal["save full ÷ put", "1 MB"][5] == "MISSED by 1.50x"
    assert by_goal["fresh restore ÷ fresh get_tuple", "100 KB"][5] == "MISSED by 3.00x"
    assert by_goal["save full ÷ put", "1 MB"][2:4] == ["3.00x", "1.50x"]  # before, after
    assert any("save journal ÷ put at 100 KB: 1.50x" in line for line in verdicts)


def test_all_goals_met_leaves_no_miss() -> None:
    _, verdicts = bench_goals.rows(_found(3.0), _found(0.1))
    assert verdicts == []


def test_the_reference_model_validates_a_saved_handoff_and_refuses_a_broken_one(tmp_path: Path) -> None:
    """The `handoff show` baseline does equivalent work: it accepts our file and refuses a bad one."""
    store = HandoffStore(tmp_path / "t1")
    store.save({"narrative": "n.", "state": {"active_tasks": ["a"]}, "priorities": [{"task": "t", "urgency": "first"}]})
    ok = subprocess.run([sys.executable, "-c", bench_goals.REFERENCE_SHOW, str(store.primary)], check=False)
    assert ok.returncode == 0
    broken = tmp_path / "broken.json"
    broken.write_text(store.primary.read_text(encoding="utf-8").replace('"first"', '"someday"'), encoding="utf-8")
    bad = subprocess.run(
        [sys.executable, "-c", bench_goals.REFERENCE_SHOW, str(broken)], check=False, capture_output=True
    )
    assert bad.returncode != 0
