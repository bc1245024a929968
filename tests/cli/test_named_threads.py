"""A thread whose folder name is no id (Japanese, spaces): its ids come from its files, and every command reads it.

Each test runs the CLI as a person's shell does (``python -m handoff_files``, this checkout) on a
thread first saved with ``--thread-id``: the folder's name only ever proposes ids for a first save.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

import pytest

from tests.cli.shell import handoff

CONTENT: Final = {
    "narrative": "Ported half the importer. The date bug is understood.",
    "state": {"active_tasks": ["port the importer"]},
    "priorities": [{"task": "port the rest", "urgency": "first"}],
}


@pytest.fixture
def named_thread(tmp_path: Path, subprocess_env: dict[str, str]) -> Path:
    """A thread in ``my threads/日本語スレッド`` (its name gives no id), saved twice with ``--thread-id jp``."""
    content = tmp_path / "c.json"
    content.write_text(json.dumps(CONTENT), encoding="utf-8")
    thread = tmp_path / "my threads" / "日本語スレッド"
    for _ in range(2):  # two generations, so diff has something to compare
        done = handoff("save", thread, content, "--thread-id", "jp", env=subprocess_env)
        assert done.returncode == 0, done.stderr
    return thread


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(["show"], "Ported half the importer", id="show"),
        pytest.param(["log"], "saved", id="log"),
        pytest.param(["history"], "2", id="history"),
        pytest.param(["brief"], "Ported half the importer", id="brief"),
        pytest.param(["doctor"], "", id="doctor"),
        pytest.param(["diff"], "", id="diff"),
        pytest.param(["validate"], "", id="validate"),
    ],
)
def test_every_reading_command_reads_a_thread_whose_folder_name_is_no_id(
    named_thread: Path, subprocess_env: dict[str, str], argv: list[str], expected: str
) -> None:
    done = handoff(*argv, named_thread, env=subprocess_env)
    assert done.returncode == 0, done.stderr
    assert "no valid id" not in done.stderr
    assert expected in done.stdout


def test_a_save_without_thread_id_keeps_the_ids_the_thread_already_has(
    named_thread: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    done = handoff("save", named_thread, tmp_path / "c.json", env=subprocess_env)
    assert done.returncode == 0, done.stderr
    shown = json.loads(handoff("show", named_thread, "--json", env=subprocess_env).stdout)
    handoff_shown = shown.get("handoff", shown)
    assert (handoff_shown["generation"], handoff_shown["thread_id"], handoff_shown["agent_id"]) == (3, "jp", "jp")


def test_a_first_save_into_such_a_folder_without_ids_is_still_refused_naming_the_flags(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    content = tmp_path / "c.json"
    content.write_text(json.dumps(CONTENT), encoding="utf-8")
    done = handoff("save", tmp_path / "日本語", content, env=subprocess_env)
    assert done.returncode == 1
    assert "no valid id can be made from the folder name" in done.stderr
    assert "--thread-id" in done.stderr
    assert "Traceback" not in done.stderr
