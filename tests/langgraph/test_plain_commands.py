"""Plain handoff commands on a LangGraph saver's thread refuse, in one line, and leave the graph as it was.

A real graph (tests/langgraph/graph_app.py) runs on HandoffSaver up to its interrupt; then the
CLI a person runs, and the MCP tool a model calls, try to write its thread. Each is refused
(exit 1, one line on stderr naming the thread and what to do instead), and the graph's state and
history read afterwards are what they were, with each checkpoint once; the graph then resumes
as an in-memory run does.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from handoff_files import HandoffStore
from handoff_files.langgraph import HandoffSaver
from handoff_files.thread.journal import first_entry
from handoff_files.thread.kind import ThreadKindError, thread_kind
from tests.cli.shell import handoff
from tests.langgraph.graph_app import build, step, summary

CONFIG: Any = {"configurable": {"thread_id": "thread-1"}}
LAYER_NAMES = ("narrative", "priorities", "warnings", "decisions", "state", "context")
LAYERS = {"narrative": "A plain handoff.", "priorities": [{"task": "go on", "urgency": "first"}]}


def _graph_now(root: Path) -> dict[str, Any]:
    """The graph's state and history read by a fresh saver, and its checkpoint ids (each must be listed once)."""
    graph = build(HandoffSaver(root))
    ids = [item.config["configurable"]["checkpoint_id"] for item in graph.get_state_history(CONFIG)]
    assert len(ids) == len(set(ids)), f"a checkpoint is listed twice: {ids}"
    now: dict[str, Any] = json.loads(json.dumps(summary(graph, CONFIG), default=str))
    return {**now, "ids": ids}


@pytest.fixture
def paused(tmp_path: Path) -> Path:
    """A saver's root whose graph ran up to its review's interrupt (thread "thread-1")."""
    root = tmp_path / "graphs"
    step(HandoffSaver(root), "thread-1", "start")
    return root


def test_each_folder_of_a_real_graph_says_it_is_a_langgraph_thread(paused: Path) -> None:
    thread = paused / "thread-1"
    folders = [thread, *sorted((thread / "namespaces").iterdir())]
    assert len(folders) > 1, "the graph's subgraph has namespaces of its own"
    for folder in folders:
        created = first_entry(folder / "journal.jsonl")
        assert created is not None
        assert (created.event, created.extra.get("kind")) == ("created", "langgraph"), folder
        assert thread_kind(HandoffStore(folder).layout) == "langgraph"
    with pytest.raises(ThreadKindError, match=r"graph\.update_state"):
        HandoffStore(folders[-1]).save(LAYERS)


def _refused_in_one_line(done: Any, thread: Path) -> None:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr  # one line, nothing before it (no diff)
    assert done.stderr.startswith(f"handoff: {thread}: is a LangGraph checkpointer's thread"), done.stderr
    assert "graph.update_state(config, values)" in done.stderr
    assert "handoff show" in done.stderr


def _resumes_as_in_memory(root: Path) -> None:
    memory = InMemorySaver()
    step(memory, "thread-1", "start")
    expected = json.loads(json.dumps(step(memory, "thread-1", "resume"), default=str))
    assert json.loads(json.dumps(step(HandoffSaver(root), "thread-1", "resume"), default=str)) == expected


@pytest.mark.parametrize(
    "content",
    [
        pytest.param("layers", id="plain-layers"),
        pytest.param("checkpoint", id="the-layers-of-the-newest-checkpoint-copied"),
    ],
)
def test_handoff_save_into_a_savers_thread_is_refused_and_the_graph_is_unchanged(
    paused: Path, tmp_path: Path, subprocess_env: dict[str, str], content: str
) -> None:
    thread = paused / "thread-1"
    before = _graph_now(paused)
    newest = json.loads(max((thread / "history").iterdir()).read_text(encoding="utf-8"))
    layers = LAYERS if content == "layers" else {key: newest[key] for key in LAYER_NAMES if key in newest}
    given = tmp_path / "c.json"
    given.write_text(json.dumps(layers), encoding="utf-8")
    _refused_in_one_line(handoff("save", thread, given, env=subprocess_env), thread)
    assert _graph_now(paused) == before
    _resumes_as_in_memory(paused)


def test_saving_as_the_savers_agent_id_is_no_way_around_the_refusal(
    paused: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    thread = paused / "thread-1"
    before = _graph_now(paused)
    given = tmp_path / "c.json"
    given.write_text(json.dumps(LAYERS), encoding="utf-8")
    done = handoff("save", thread, given, "--agent-id", "langgraph", env=subprocess_env)
    _refused_in_one_line(done, thread)
    assert _graph_now(paused) == before


def test_handoff_set_on_a_savers_thread_is_refused_and_the_graph_is_unchanged(
    paused: Path, subprocess_env: dict[str, str]
) -> None:
    thread = paused / "thread-1"
    before = _graph_now(paused)
    assignments = ("narrative=Changed by hand.", "state.data.langgraph.checkpoint_id=x")
    done = handoff("set", thread, *assignments, env=subprocess_env)
    _refused_in_one_line(done, thread)
    assert _graph_now(paused) == before
    _resumes_as_in_memory(paused)


def test_handoff_seal_after_a_hand_edit_of_a_checkpoint_is_refused_and_the_graph_is_unchanged(
    paused: Path, subprocess_env: dict[str, str]
) -> None:
    thread = paused / "thread-1"
    before = _graph_now(paused)
    primary = thread / "handoff.json"
    document = json.loads(primary.read_text(encoding="utf-8"))
    document["narrative"] = "Edited by hand."
    primary.write_text(json.dumps(document, indent=2), encoding="utf-8")
    done = handoff("seal", thread, "--yes", env=subprocess_env)
    _refused_in_one_line(done, thread)
    assert "a hand edit of a checkpoint is not sealed" in done.stderr
    assert _graph_now(paused) == before
    _resumes_as_in_memory(paused)  # the graph's next checkpoint replaces the edited file


def test_handoff_edit_of_a_savers_thread_is_refused_before_an_editor_opens(
    paused: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    thread = paused / "thread-1"
    before = _graph_now(paused)
    opened = tmp_path / "editor-opened"
    editor = f'{sys.executable} -c "import pathlib; pathlib.Path({str(opened)!r}).touch()"'
    done = handoff("edit", thread, env={**subprocess_env, "EDITOR": editor, "VISUAL": editor})
    _refused_in_one_line(done, thread)
    assert not opened.exists(), "the refusal comes before a person spends time editing"
    assert _graph_now(paused) == before


def test_the_mcp_save_tool_on_a_savers_thread_is_refused_and_the_graph_is_unchanged(paused: Path) -> None:
    # here, not at the top: the helpers skip their module's tests without the [mcp] extra
    from tests.mcp_server.helpers import Client, server, talk, text

    before = _graph_now(paused)

    async def session(client: Client) -> Any:
        return await client.call_tool("handoff_save", {**LAYERS, "thread": "thread-1"})

    result = talk(server("--root", str(paused)), session)
    assert result.is_error
    assert "is a LangGraph checkpointer's thread" in text(result)
    assert "graph.update_state(config, values)" in text(result)
    assert _graph_now(paused) == before


def test_the_briefing_of_a_savers_thread_never_asks_for_a_save_that_would_be_refused(
    paused: Path, subprocess_env: dict[str, str]
) -> None:
    done = handoff("brief", paused / "thread-1", env=subprocess_env)
    assert done.returncode == 0, done.stderr
    assert "handoff save" not in done.stdout
    assert "handoff_save" not in done.stdout
    assert "graph.update_state" in done.stdout
