"""``handoff show`` on a LangGraph saver's thread shows the checkpoint: step, next nodes, channels, interrupts.

Every test runs the real command in a child process, as a person would, on threads a real graph
(or the saver's own API) wrote. Showing reads plain JSON only: typed bytes are never decoded, and
LangGraph need not be installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from handoff_files import HandoffStore, load
from handoff_files.cli.render import briefing
from handoff_files.cli.terminal import Terminal
from handoff_files.langgraph import HandoffSaver
from handoff_files.langgraph.describe import describe_checkpoint
from tests.cli.test_json_schemas import check
from tests.langgraph.graph_app import step
from tests.langgraph.test_untrusted_values import _hostile, _plant

# A stand-in for a Python without the [langgraph] extra: importing LangGraph or LangChain fails.
_WITHOUT_LANGGRAPH = """
import sys
class Missing:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"langgraph", "langchain_core", "ormsgpack"}:
            raise ImportError(f"No module named {name!r} (blocked: the [langgraph] extra is not installed)")
        return None
sys.meta_path.insert(0, Missing())
from handoff_files.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture(scope="module")
def paused(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real graph's thread (messages, a subgraph run four times), stopped at the review node's ``interrupt()``.

    Module-scoped: the graph takes a second to run, and every test here only reads the thread.
    """
    root = tmp_path_factory.mktemp("show") / "graphs"
    assert step(HandoffSaver(root), "thread-1", "start")["next"] == ["review"]
    return root / "thread-1"


def _show(env: dict[str, str], *args: str, script: str | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "handoff_files"] if script is None else [sys.executable, "-c", script]
    return subprocess.run([*command, "show", *args], env=env, capture_output=True, text=True, check=False, timeout=60)


def _record(thread: Path) -> dict[str, Any]:
    record: dict[str, Any] = load(thread / "handoff.json").state.data["langgraph"]
    return record


def test_show_gives_the_checkpoints_step_next_node_channels_and_thread(
    paused: Path, subprocess_env: dict[str, str]
) -> None:
    done = _show(subprocess_env, str(paused))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    record = _record(paused)
    assert f"checkpoint: {record['checkpoint_id']}, step 8, source loop" in out
    assert f"parent: {record['parent_checkpoint_id']}" in out, "LangGraph's parent, from the record"
    assert "thread: thread-1, namespace (root)" in out
    assert "next: review (interrupted)" in out, "the node waiting at its interrupt()"
    assert "messages: 9 messages (" in out
    assert "      ai: sub-step 3" in out, "the newest message: its type and first words"
    assert "  count: 3\n" in out
    assert '  narrative: "Planning the work."' in out
    assert "INTERRUPTS (waiting for an answer)\n  review: " in out
    assert "10 checkpoints in history/; 4 subgraph namespace(s)" in out
    assert out.count("  sub-") == 4, "each subgraph namespace, by folder"
    assert '{"langgraph"' not in out, "no cut blob of the record"
    assert "PRIORITIES" not in out, "a checkpoint's empty layers are left out"
    values = out.split("INTERRUPTS", 1)[1].split("SUBGRAPHS", 1)[0]
    assert max(len(line) for line in values.splitlines()) <= 80, "value lines are cut to 80 columns in a pipe"


def test_on_an_80_column_terminal_every_line_fits(paused: Path) -> None:
    restored = HandoffStore(paused).restore()
    view = describe_checkpoint(restored.handoff, restored.path, thread=paused)
    assert view is not None
    text = briefing(restored, term=Terminal(width=80), checkpoint=view)
    long = [line for line in text.splitlines() if len(line) > 80 and not line.startswith("from: ")]
    assert not long, "only a path too long for the line (never broken) may pass 80 columns"


def test_show_gives_the_question_a_real_interrupt_asks(paused: Path, subprocess_env: dict[str, str]) -> None:
    done = _show(subprocess_env, str(paused))
    assert done.returncode == 0, done.stderr
    assert "ship it?" in done.stdout.split("INTERRUPTS", 1)[1].split("CHANNELS", 1)[0]


def test_an_interrupt_stored_as_json_is_shown_with_its_question(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    saver = HandoffSaver(tmp_path / "graphs")
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"branch:to:review": None}
    checkpoint["channel_versions"] = {"branch:to:review": 1}
    config = saver.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, checkpoint, {"step": 2}, {})
    question = {"question": "ship it?", "count": 3}
    saver.put_writes(config, [("__interrupt__", question)], "task-1", "~__pregel_pull, review")
    done = _show(subprocess_env, str(tmp_path / "graphs" / "t"))
    assert done.returncode == 0, done.stderr
    assert '  review: {"question":"ship it?","count":3}' in done.stdout
    assert "next: review (interrupted)" in done.stdout


def test_interrupts_in_langgraphs_own_shape_show_each_question(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    """``[{"value": question, "id": …}]``, LangGraph's ``Interrupt`` as JSON: one line per question, its id left out."""
    saver = HandoffSaver(tmp_path / "graphs")
    checkpoint = empty_checkpoint()
    config = saver.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, checkpoint, {"step": 2}, {})
    asked = [{"value": {"question": "ship it?"}, "id": "a" * 32}, {"value": "and the docs?", "id": "b" * 32}]
    saver.put_writes(config, [("__interrupt__", asked)], "task-1", "~__pregel_pull, review")
    done = _show(subprocess_env, str(tmp_path / "graphs" / "t"))
    assert done.returncode == 0, done.stderr
    assert '  review: {"question":"ship it?"}\n  review: "and the docs?"\n' in done.stdout
    assert "a" * 32 not in done.stdout


def test_show_json_gives_the_checkpoint_under_langgraph(paused: Path, subprocess_env: dict[str, str]) -> None:
    done = _show(subprocess_env, str(paused), "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    check(document, "show")
    described = document["langgraph"]
    assert described["step"] == 8
    assert described["next"] == [{"node": "review", "status": "interrupted"}]
    assert [c["name"] for c in described["channels"]] == ["messages", "narrative", "count"]
    assert described["channels"][0]["value"]["count"] == 9
    assert described["interrupts"][0]["node"] == "review"
    assert described["checkpoints"] == 10
    assert len(described["subgraphs"]) == 4


def test_a_plain_threads_json_says_it_holds_no_checkpoint(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    thread = tmp_path / "plain"
    (tmp_path / "c.json").write_text('{"narrative": "Plain."}', encoding="utf-8")
    saved = subprocess.run(
        [sys.executable, "-m", "handoff_files", "save", str(thread), str(tmp_path / "c.json"), "--thread-id", "plain"],
        env=subprocess_env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert saved.returncode == 0, saved.stderr
    document = json.loads(_show(subprocess_env, str(thread), "--json").stdout)
    assert document["langgraph"] is None
    check(document, "show")


def test_a_subgraph_namespace_and_an_older_generation_show_their_own_checkpoint(
    paused: Path, subprocess_env: dict[str, str]
) -> None:
    namespace = sorted((paused / "namespaces").iterdir())[0]
    done = _show(subprocess_env, str(namespace))
    assert done.returncode == 0, done.stderr
    assert f"namespace {_record(namespace)['checkpoint_ns']}" in done.stdout
    older = _show(subprocess_env, str(paused), "--generation", "1")
    assert older.returncode == 0, older.stderr
    assert "step -1, source input" in older.stdout
    assert "next: __start__" in older.stdout, "the input waits for the __start__ node"


def test_a_checkpoint_file_in_history_is_shown_with_its_threads_writes(
    paused: Path, subprocess_env: dict[str, str]
) -> None:
    done = _show(subprocess_env, str(paused / "history" / "00000010.json"))
    assert done.returncode == 0, done.stderr
    assert "next: review (interrupted)" in done.stdout, "its pending writes, read from its thread's writes/"
    assert "10 checkpoints in history/" in done.stdout


@pytest.mark.parametrize("where", ["value", "metadata", "write"])
def test_typed_bytes_are_shown_by_size_never_decoded(
    tmp_path: Path, subprocess_env: dict[str, str], where: str
) -> None:
    """A value that would construct a type not allowed (``os.system``) shows as typed bytes: no error, nothing run."""
    marker = tmp_path / "marker"
    _plant(tmp_path / "graphs", _hostile("os.system", marker), where)
    done = _show(subprocess_env, str(tmp_path / "graphs" / "t"))
    assert done.returncode == 0, done.stderr
    assert "<typed msgpack, " in done.stdout
    if where == "metadata":
        assert "step (typed, not read)" in done.stdout
    assert not marker.exists(), "showing ran the planted code"


class _OwnSerializer(JsonPlusSerializer):
    """A serializer of the caller's own: the saver writes every value through it, nothing in clear."""


def test_an_opaque_savers_checkpoint_is_shown_as_typed_bytes(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    saver = HandoffSaver(tmp_path / "graphs", serde=_OwnSerializer())
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"narrative": "secret plan", "branch:to:work": None}
    checkpoint["channel_versions"] = {"narrative": 1, "branch:to:work": 1}
    saver.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, checkpoint, {"step": 4}, {})
    done = _show(subprocess_env, str(tmp_path / "graphs" / "t"))
    assert done.returncode == 0, done.stderr
    assert "next: unknown (the checkpoint is stored as typed bytes)" in done.stdout
    assert "step (typed, not read)" in done.stdout
    assert "  narrative: <typed msgpack, " in done.stdout
    assert "secret plan" not in done.stdout


def test_show_works_without_langgraph_installed(paused: Path, subprocess_env: dict[str, str]) -> None:
    done = _show(subprocess_env, str(paused), script=_WITHOUT_LANGGRAPH)
    assert done.returncode == 0, done.stderr
    assert "next: review (interrupted)" in done.stdout
    assert "messages: 9 messages (" in done.stdout
