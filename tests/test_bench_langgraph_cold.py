"""The LangGraph cold-restart and big-state bench: a quick run writes every table; a refused put is shown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench import bench_langgraph_cold as cold
from bench.timing import Sample


def _child(read_ms: float) -> dict[str, float]:
    return {"import": 0.3, "read": read_ms / 1e3, "rss": 50e6}


def test_a_refused_put_is_a_table_cell_and_its_read_is_left_out(tmp_path: Path) -> None:
    message = f"{tmp_path}/big: handoff would be 40,721,616 bytes, over the 16,777,216-byte limit | trim it"
    big = {
        "HandoffSaver": {"put": [{"refused": message}], "get": []},
        "SqliteSaver": {"put": [{"seconds": 0.5, "rss_rise": 90e6}], "get": [{"seconds": 0.2, "rss_rise": 80e6}]},
    }
    rows, goal = cold.big_rows(big, tmp_path, 40)
    put_ms, put_rss, get_ms, get_rss = rows
    assert (
        put_ms[2]
        == "refused: <scratch>/big: handoff would be 40,721,616 bytes, over the 16,777,216-byte limit \\| trim it"
    )
    assert put_ms[3] == "500.000"
    assert put_ms[4] == "n/a"
    assert put_rss[2] == get_ms[2] == get_rss[2] == "n/a (put refused)"
    assert get_ms[3] == "200.000"
    assert goal[0].startswith("a 40 MB state stored and read back: MISSED (refused: <scratch>/big")


def test_the_goal_lines_judge_the_first_read_against_sqlite_and_against_the_shortest_thread() -> None:
    def result(ours_ms: float, theirs_ms: float) -> dict[str, Any]:
        return {
            "build": {"HandoffSaver": 0.004, "SqliteSaver": 0.001},
            "disk": {"HandoffSaver": 1e6, "SqliteSaver": 5e5},
            "wall": {name: Sample(name, (0.6,)) for name in cold.SAVERS},
            "child": {"HandoffSaver": [_child(ours_ms)], "SqliteSaver": [_child(theirs_ms)]},
        }

    rows, threads, goals = cold.cold_tables({10: result(3.0, 2.0), 10_000: result(300.0, 2.5)})
    assert rows[0][:7] == [
        "10",
        "open + first get_tuple ms (in the child)",
        "3.000",
        "2.000",
        "1.50x",
        "<= 2x PASS",
        "1.00x / 1.00x",
    ]
    assert rows[4][4:7] == ["120.00x", "<= 2x MISSED", "100.00x / 1.25x"]
    assert threads[1] == ["10,000", "1.0", "0.5", "4.000", "1.000"]
    assert (
        goals[0]
        == "first read within 2x SqliteSaver's at every length: <= 2x MISSED (worst 120.00x, at 10,000 checkpoints)"
    )
    assert goals[1].startswith("first read the same at 10 and 10,000 checkpoints (within 1.5x): <= 1.5x MISSED")


@pytest.mark.slow  # make slow: a whole measurement run, in fresh processes (~10 s)
def test_a_quick_run_measures_each_thread_and_the_big_state_and_writes_the_report(tmp_path: Path) -> None:
    out = tmp_path / "results-langgraph-cold.md"
    assert cold.main(["--quick", "--counts", "3,6", "--state-mb", "0.5", "--out", str(out)]) == 0
    report = out.read_text(encoding="utf-8")
    for heading in ("## Goals", "## A fresh process's first read", "## The threads", "## A 0.5 MB state", "## Method"):
        assert heading in report
    assert "| 3 | open + first get_tuple ms (in the child) |" in report
    assert "| 6 | whole process ms (wall) |" in report
    assert "first read the same at 3 and 6 checkpoints" in report
    # a 0.5 MB state is under any limit: stored and read back (a refusal would say "refused:")
    assert "a 0.5 MB state stored and read back: PASS" in report
    assert "--quick: a smoke run" in report
