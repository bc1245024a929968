"""Editing a damaged thread from the command line: ``handoff edit`` starts from the newest verified generation, and
the doctor's advice for a thread rebuilt from ``state.json`` is a command that works.

Each test runs the CLI as a person's shell does (``python -m handoff_files``, this checkout); the
editor is a real program that changes the file it is given.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Final

import pytest

from handoff_files import HandoffStore, load
from handoff_files.thread.settings import Durability
from tests.cli.shell import handoff, machine

# `EDITOR='python editor.py OLD NEW'`: a person's change of some text in the file given last
EDITOR_SCRIPT: Final = """
import pathlib, sys
old, new, target = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
text = target.read_text(encoding="utf-8")
assert old in text, text
target.write_text(text.replace(old, new), encoding="utf-8")
"""


def _saved(thread: Path, count: int, *, durability: Durability = "journal") -> HandoffStore:
    store = HandoffStore(thread, durability=durability)
    for i in range(1, count + 1):
        store.save(
            {
                "narrative": f"Step {i} is done.",
                "state": {"active_tasks": [f"task {i}"]},
                "decisions": [{"decision": f"decision {i}", "reason": "it works"}],
                "priorities": [{"task": f"step {i + 1}", "urgency": "first"}],
            }
        )
    return store


def _editing(env: dict[str, str], tmp_path: Path, old: str, new: str) -> dict[str, str]:
    script = tmp_path / "editor.py"
    script.write_text(EDITOR_SCRIPT, encoding="utf-8")
    return {**env, "VISUAL": shlex.join([sys.executable, str(script), old, new])}


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param("truncated", id="truncated-primary"),
        pytest.param("missing", id="missing-primary"),
    ],
)
def test_edit_of_a_thread_whose_primary_is_damaged_starts_from_the_newest_verified_generation(
    tmp_path: Path, subprocess_env: dict[str, str], damage: str
) -> None:
    store = _saved(tmp_path / "t", 2)
    data = store.primary.read_bytes()
    if damage == "truncated":
        store.primary.write_bytes(data[: len(data) // 2])
    else:
        store.primary.unlink()
    env = _editing(subprocess_env, tmp_path, "Step 2 is done.", "Step 2 is done, and checked.")
    done = handoff("edit", store.path, env=env)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    # the person is told where the copy came from
    assert "generation 2" in done.stderr
    assert "as history/00000002.json holds it" in done.stderr
    assert "saved generation 3" in done.stdout
    saved = load(store.primary)
    assert (saved.generation, saved.narrative) == (3, "Step 2 is done, and checked.")
    assert [d.decision for d in saved.decisions] == ["decision 2"]


def _rebuilt_thread(tmp_path: Path) -> HandoffStore:
    """A thread whose generation 3 survives only in state.json: its primary and history copy are lost."""
    # full saves: a journal-first save's journal line would restore generation 3 exactly, not rebuild it
    store = _saved(tmp_path / "a thread", 3, durability="full")  # a space: the advice must quote the path
    store.primary.unlink()
    (store.history_dir / "00000003.json").unlink()
    assert HandoffStore(store.path).restore().source == "rebuilt"
    return store


def test_following_the_doctors_advice_for_a_rebuilt_thread_seals_it_and_the_doctor_is_satisfied(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    store = _rebuilt_thread(tmp_path)
    seal_of_3 = json.loads(store.mirror_path.read_text(encoding="utf-8"))["seal"]
    findings = machine(handoff("doctor", store.path, "--json", env=subprocess_env))
    rebuilt = next(f for f in findings if "survives only in state.json" in f["what"])
    command = rebuilt["advice"].split("`")[1]  # the advice names one command, in backquotes
    assert command == f"handoff seal {shlex.quote(str(store.path))}", rebuilt["advice"]
    done = handoff(*shlex.split(command)[1:], env=subprocess_env)
    assert done.returncode == 0, done.stderr
    assert "sealed generation 4" in done.stdout
    sealed = load(store.primary)
    assert sealed.generation == 4
    assert sealed.state.active_tasks == ["task 3"]  # state.json's state, exact
    assert sealed.parent == seal_of_3  # the chain runs through the rebuilt generation
    again = handoff("doctor", store.path, env=subprocess_env)
    assert again.returncode == 0, again.stdout + again.stderr
    restored = HandoffStore(store.path).restore()
    assert (restored.source, restored.generation) == ("primary", 4)
