"""A real StateGraph on HandoffSaver: the same state and history as on InMemorySaver, across a process restart."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from handoff_files import HandoffStore, load
from handoff_files.langgraph import HandoffSaver
from tests.langgraph.graph_app import step


def _in_fresh_process(python: str, env: dict[str, str], root: Path, action: str) -> dict[str, Any]:
    done = subprocess.run(
        [python, "-m", "tests.langgraph.graph_app", str(root), "thread-1", action],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return _comparable(json.loads(done.stdout))


def _comparable(result: Any) -> dict[str, Any]:
    comparable: dict[str, Any] = json.loads(json.dumps(result, default=str))  # tuples become lists, as in a process
    return comparable


def test_a_graph_interrupted_restarted_and_resumed_matches_the_in_memory_run(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    memory = InMemorySaver()
    expected_paused = _comparable(step(memory, "thread-1", "start"))
    expected_done = _comparable(step(memory, "thread-1", "resume"))
    assert expected_paused["next"] == ["review"], "the graph stops at the review's interrupt"
    assert expected_done["next"] == []

    root = tmp_path / "graphs"
    paused = _in_fresh_process(python, subprocess_env, root, "start")
    done = _in_fresh_process(python, subprocess_env, root, "resume")  # another process: a restart
    assert paused == expected_paused
    assert done == expected_done
    assert done["values"]["count"] == 3
    assert done["values"]["decisions"] == [{"decision": "ship", "reason": "the reviewer said yes"}]


def test_the_thread_is_a_handoff_a_person_can_read(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    step(HandoffSaver(root), "thread-1", "start")
    step(HandoffSaver(root), "thread-1", "resume")
    thread = root / "thread-1"
    restored = HandoffStore(thread).restore()
    assert restored.source == "primary"
    handoff = restored.handoff
    assert handoff.narrative == "Reviewed after 3 steps: yes."
    assert [decision.decision for decision in handoff.decisions] == ["ship"]
    text = (thread / "handoff.json").read_text(encoding="utf-8")
    assert '"worked 3"' in text, "the conversation is readable JSON in the file"
    assert '"base64"' not in text, "nothing in this graph's state needed typed bytes"
    # the subgraph's namespace is a handoff thread of its own, every file sealed
    subgraph = next((thread / "namespaces").iterdir())
    for path in sorted((subgraph / "history").iterdir()):
        assert load(path).state.data["langgraph"]["checkpoint_ns"].startswith("sub:")


def test_every_folder_the_saver_makes_is_private_and_reading_makes_none(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    assert saver.get_tuple({"configurable": {"thread_id": "nobody"}}) is None
    assert not root.exists(), "a read never writes"
    step(saver, "thread-1", "start")
    folders = [root, *(path for path in root.rglob("*") if path.is_dir())]
    assert {oct(path.stat().st_mode & 0o777) for path in folders} == {"0o700"}


def test_any_thread_id_or_namespace_gets_its_own_folder_under_the_root(tmp_path: Path) -> None:
    from langgraph.checkpoint.base import empty_checkpoint

    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    odd = ["../escape", "a/b", "", ".deleted-x", "namespaces", "ünïcode id", "x" * 200, "thread-1"]
    for index, thread in enumerate(odd):
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"n": index}
        checkpoint["channel_versions"] = {"n": 1}
        for namespace in ("", "sub:1|inner:2"):
            config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": namespace}}
            saver.put(config, checkpoint, {}, {})
    folders = {path.resolve() for path in root.rglob("*") if path.is_dir()}
    assert all(root.resolve() in folder.parents for folder in folders), "nothing is written outside the root"
    for index, thread in enumerate(odd):
        for namespace in ("", "sub:1|inner:2"):
            got = saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": namespace}})
            assert got is not None
            assert got.checkpoint["channel_values"] == {"n": index}
            assert got.config["configurable"]["thread_id"] == thread
    assert len(list(root.iterdir())) == len(odd)
