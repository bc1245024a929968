"""``handoff prune`` as a person runs it: a wrong path fails, the ``--keep`` limit reads the same everywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from handoff_files import HandoffStore, HandoffValidationError, prune_history
from handoff_files.thread.retention import KEEP_RULE
from tests.cli.shell import handoff, machine

CONTENT = {"narrative": "Ported half the importer."}


def _thread(path: Path, saves: int = 3) -> Path:
    store = HandoffStore(path)
    for _ in range(saves):
        store.save(CONTENT)
    return path


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_path_that_does_not_exist_is_no_such_thread_with_exit_1(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    done = handoff("prune", tmp_path / "nonexistent", "--keep", "3", env=subprocess_env)
    assert done.returncode == 1, done.stdout
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"handoff: {tmp_path / 'nonexistent'}: no such thread" in done.stderr
    assert done.stdout == ""
    assert not (tmp_path / "nonexistent").exists(), "a mistyped path is never created"


def test_a_folder_of_threads_is_refused_saying_it_is_neither_a_thread_nor_a_langgraph_root(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    folder = tmp_path / "threads"
    _thread(folder / "t1")
    _thread(folder / "t2")
    before = _files(folder)
    done = handoff("prune", folder, "--keep", "1", env=subprocess_env)
    assert done.returncode == 1, done.stdout
    assert done.stderr.count("\n") == 1, done.stderr
    assert "neither a thread nor a LangGraph root" in done.stderr
    assert f"handoff prune {folder / 't1'} --keep N" in done.stderr, "it says what to run instead"
    assert _files(folder) == before
    failed = machine(handoff("prune", folder, "--keep", "1", "--json", env=subprocess_env))
    assert failed["error"]["kind"] == "HandoffValidationError"


def test_an_empty_folder_is_refused_as_holding_nothing_to_prune(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    (tmp_path / "empty").mkdir()
    done = handoff("prune", tmp_path / "empty", "--keep", "1", env=subprocess_env)
    assert done.returncode == 1
    assert "neither a thread nor a LangGraph root" in done.stderr, done.stderr


def test_a_file_is_refused(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    primary = HandoffStore(tmp_path / "t1").save(CONTENT).path
    done = handoff("prune", primary, "--keep", "1", env=subprocess_env)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert "not a folder" in done.stderr


@pytest.mark.parametrize(
    "keep", [pytest.param("0", id="zero"), pytest.param("-1", id="negative"), pytest.param("x", id="word")]
)
def test_a_keep_below_one_is_a_usage_error_in_the_one_wording(
    tmp_path: Path, subprocess_env: dict[str, str], keep: str
) -> None:
    thread = _thread(tmp_path / "t1")
    done = handoff("prune", thread, "--keep", keep, env=subprocess_env)
    assert done.returncode == 2
    assert f"argument --keep: must be {KEEP_RULE}, not {keep!r}" in done.stderr, done.stderr
    assert "0 or more" not in done.stderr


def test_the_library_words_the_keep_limit_as_the_command_line_does(tmp_path: Path) -> None:
    thread = _thread(tmp_path / "t1")
    with pytest.raises(HandoffValidationError) as caught:
        prune_history(thread, 0)
    assert caught.value.reason == f"keep must be {KEEP_RULE}, not 0"
    saver = pytest.importorskip("handoff_files.langgraph.saver")
    from handoff_files.langgraph.trim import keep_newest  # needs the extra, checked above

    with pytest.raises(HandoffValidationError) as caught:
        keep_newest(saver.HandoffSaver(tmp_path / "graphs"), 0)
    assert caught.value.reason == f"keep must be {KEEP_RULE}, not 0"


def test_prune_thread_json_and_text_still_report_what_went(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    thread = _thread(tmp_path / "t1", 4)
    dry = handoff("prune", thread, "--keep", "2", "--dry-run", "--json", env=subprocess_env)
    assert json.loads(dry.stdout)["removed"] == ["00000002.json", "00000001.json"], dry.stderr
    done = handoff("prune", thread, "--keep", "2", env=subprocess_env)
    assert done.returncode == 0, done.stderr
    assert "removed history/00000001.json" in done.stdout
