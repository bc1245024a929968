"""What a newcomer meets running the plain commands on a small LangGraph graph's finished thread (issue 20).

A one-node graph (``inc``) runs to its end on HandoffSaver; then ``handoff show``, ``log``,
``doctor``, ``validate`` and the help run in a child process, as a person runs them. What they
print must be true of a saver's thread: no advice to run a command the thread refuses, no
placeholder where the checkpoint has something to say, the saver's own folders known.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from handoff_files.langgraph import HandoffSaver
from handoff_files.langgraph.blobs import BLOBS_DIR
from handoff_files.langgraph.layout import NAMESPACES_DIR, WRITES_DIR
from handoff_files.thread.kind import SAVER_FOLDERS
from tests.cli.shell import handoff


class _State(TypedDict, total=False):
    count: int


def _inc(state: _State) -> _State:
    return {"count": state.get("count", 0) + 1}


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saver's thread whose one-node graph ran to its end (three checkpoints: input, step 0, step 1).

    Module-scoped: tests that change it work on a copy (see :func:`copied`).
    """
    graph = StateGraph(_State)
    graph.add_node("inc", _inc)
    graph.add_edge(START, "inc")
    graph.add_edge("inc", END)
    root = tmp_path_factory.mktemp("newcomer") / "graphs"
    config: Any = {"configurable": {"thread_id": "t1"}}
    assert graph.compile(checkpointer=HandoffSaver(root)).invoke({"count": 0}, config) == {"count": 1}
    return root / "t1"


@pytest.fixture
def copied(finished: Path, tmp_path: Path) -> Path:
    """A copy of the finished thread that a test may damage or edit."""
    return Path(shutil.copytree(finished, tmp_path / "t1"))


def _edit_primary(thread: Path, *, drop_seal: bool) -> None:
    primary = thread / "handoff.json"
    document = json.loads(primary.read_text(encoding="utf-8"))
    document["narrative"] = "Edited by hand."
    if drop_seal:
        del document["seal"]
    primary.write_text(json.dumps(document, indent=2), encoding="utf-8")


@pytest.mark.parametrize(
    "drop_seal",
    [pytest.param(False, id="edited-after-sealing"), pytest.param(True, id="seal-removed")],
)
@pytest.mark.parametrize("command", ["show", "doctor", "validate"])
def test_an_edited_checkpoint_is_never_told_to_be_sealed_but_how_to_mend_it(
    copied: Path, subprocess_env: dict[str, str], command: str, *, drop_seal: bool
) -> None:
    _edit_primary(copied, drop_seal=drop_seal)
    done = handoff(command, copied, env=subprocess_env)
    said = done.stdout + done.stderr
    assert "handoff.json" in said, said  # the edit is reported
    assert "handoff seal" not in said, said  # a saver's thread refuses `handoff seal`
    assert "handoff doctor --repair" in said, said
    assert "graph.update_state" in said, said
    assert "Traceback" not in done.stderr


def test_the_seal_advice_on_a_plain_thread_is_unchanged(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    thread = tmp_path / "plain"
    layers = tmp_path / "layers.json"
    layers.write_text(json.dumps({"narrative": "Plain."}), encoding="utf-8")
    assert handoff("save", thread, layers, env=subprocess_env).returncode == 0
    _edit_primary(thread, drop_seal=False)
    done = handoff("validate", thread, env=subprocess_env)
    assert "`handoff seal` accepts the edit" in done.stderr


def test_log_of_a_savers_thread_gives_each_checkpoints_step_and_source(
    finished: Path, subprocess_env: dict[str, str]
) -> None:
    done = handoff("log", finished, env=subprocess_env)
    assert done.returncode == 0, done.stderr
    assert "(no narrative)" not in done.stdout
    saves = [line for line in done.stdout.splitlines() if " saved " in line]
    assert len(saves) == 3, done.stdout
    assert saves[0].endswith("checkpoint step -1 (input)"), saves
    assert saves[1].endswith("checkpoint step 0 (loop)"), saves
    assert saves[2].endswith("checkpoint step 1 (loop)"), saves


def test_doctor_knows_the_savers_own_folders(finished: Path, subprocess_env: dict[str, str]) -> None:
    (finished.parent / "notes.txt").write_text("a person's", encoding="utf-8")  # beside the thread: not in it
    done = handoff("doctor", finished, env=subprocess_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "not the thread's" not in done.stdout, done.stdout
    assert "pending-writes file(s) in writes/ read" in done.stdout


def test_doctor_still_lists_a_persons_entry_in_a_savers_thread(copied: Path, subprocess_env: dict[str, str]) -> None:
    (copied / "notes.txt").write_text("a person's", encoding="utf-8")
    done = handoff("doctor", copied, env=subprocess_env)
    assert "1 other entry beside the thread's files: notes.txt — not the thread's" in done.stdout, done.stdout
    assert "writes" not in done.stdout.split("beside the thread's files:")[1].split("\n")[0]


@pytest.mark.parametrize("command", ["show", "history", "diff"])
def test_help_on_how_many_generations_are_kept_is_true_of_a_savers_thread_too(
    subprocess_env: dict[str, str], command: str
) -> None:
    done = handoff(command, "--help", env=subprocess_env)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())  # argparse wraps lines
    assert "a LangGraph saver every checkpoint" in text, text


def test_show_of_a_finished_graph_says_nothing_runs_next(finished: Path, subprocess_env: dict[str, str]) -> None:
    done = handoff("show", finished, env=subprocess_env)
    assert done.returncode == 0, done.stderr
    assert "  next: nothing (the graph finished)\n" in done.stdout, done.stdout


def test_show_of_a_checkpoint_whose_node_already_ran_says_so_plainly(
    finished: Path, subprocess_env: dict[str, str]
) -> None:
    done = handoff("show", finished / "history" / "00000002.json", env=subprocess_env)
    assert done.returncode == 0, done.stderr
    assert "(finished)" not in done.stdout, done.stdout
    assert "  next: inc (ran from this checkpoint: its writes are pending)\n" in done.stdout, done.stdout


def test_the_thread_layers_list_of_saver_folders_is_the_savers_own() -> None:
    assert {WRITES_DIR, BLOBS_DIR, NAMESPACES_DIR} == SAVER_FOLDERS


def test_doctor_on_a_checkpoint_only_state_json_holds_never_advises_a_seal(
    copied: Path, subprocess_env: dict[str, str]
) -> None:
    (copied / "history" / "00000003.json").unlink()
    (copied / "handoff.json").unlink()
    journal = copied / "journal.jsonl"
    lines = journal.read_text(encoding="utf-8").splitlines(keepends=True)
    journal.write_text("".join(line for line in lines if json.loads(line)["generation"] != 3), encoding="utf-8")
    done = handoff("doctor", copied, env=subprocess_env)
    assert "generation 3 survives only in state.json" in done.stdout, done.stdout
    assert "handoff seal" not in done.stdout, done.stdout
    assert "the graph resumes from its newest checkpoint that verifies" in done.stdout, done.stdout
    assert "graph.update_state" in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("command", "kept"),
    [
        pytest.param("show", False, id="show-the-primary-named-by-its-file"),
        pytest.param("validate", False, id="validate-the-primary-named-by-its-file"),
        pytest.param("show", True, id="show-a-displaced-copy-in-history"),
    ],
)
def test_a_checkpoint_file_named_alone_is_never_told_to_be_sealed(
    copied: Path, subprocess_env: dict[str, str], command: str, *, kept: bool
) -> None:
    _edit_primary(copied, drop_seal=False)
    target = copied / "handoff.json"
    if kept:  # as the saver's next checkpoint keeps a primary that did not verify
        target = target.rename(copied / "history" / "displaced-20260101T000000000000Z.json")
    done = handoff(command, target, env=subprocess_env)
    assert done.returncode == 1, done.stdout
    assert "handoff seal" not in done.stderr, done.stderr
    assert "graph.update_state" in done.stderr, done.stderr
