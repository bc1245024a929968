"""A 100-step LangGraph graph, SIGKILLed 10 times (50 in `make slow`), restarted by the restart-kill plugin."""

from __future__ import annotations

from collections import Counter

import pytest

from handoff_files.langgraph import HandoffSaver
from handoff_files.run.killrun import Killer
from tests.langgraph.kill_agent import STEPS


@pytest.mark.parametrize(
    "kills", [pytest.param(10, id="10-kills"), pytest.param(50, id="50-kills", marks=pytest.mark.slow)]
)
def test_a_graph_killed_many_times_finishes_each_step_once(
    handoff_killer: Killer, python: str, subprocess_env: dict[str, str], kills: int
) -> None:
    run = handoff_killer.run(
        [python, "-m", "tests.langgraph.kill_agent"],
        kills=kills,
        when="saves",
        after_saves=(1, 2),  # 50 kills land within the graph's ~100 checkpoints
        timeout=600,
        env=subprocess_env,
    )
    assert run.finished, run.ended
    assert len(run.kills) == kills
    # the graph's own state: every step applied exactly once, in order
    last = HandoffSaver(run.thread.parent).get_tuple({"configurable": {"thread_id": run.thread.name}})
    assert last is not None
    assert last.checkpoint["channel_values"]["done"] == list(range(1, STEPS + 1))
    # the side effects: each step's at least once; again only for a step a kill cut short before its
    # checkpoint (LangGraph re-runs such a step; a step whose checkpoint was saved never runs again)
    effects = Counter(int(line.split()[0]) for line in (run.thread.parent / "effects.log").read_text().splitlines())
    assert set(effects) == set(range(1, STEPS + 1))
    again = sum(count - 1 for count in effects.values())
    assert again <= len(run.kills), f"{again} steps ran again after {len(run.kills)} kills"
