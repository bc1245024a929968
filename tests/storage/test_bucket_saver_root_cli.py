"""The CLI on a LangGraph bucket saver's root: ``prune`` trims it, ``verify``/``doctor``/``show`` name it for what it
is (never "ok, 0 generations" nor its objects a stranger's), on SeaweedFS."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from handoff_files.cli.main import main
from handoff_files.langgraph import HandoffSaver
from handoff_files.langgraph.bucket_keys import encode_name


def _graph(url: str, threads: dict[str, int]) -> HandoffSaver:
    saver = HandoffSaver(url)
    for thread, count in threads.items():
        config: dict[str, Any] = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        for number in range(1, count + 1):
            checkpoint = empty_checkpoint()
            checkpoint["channel_values"] = {"count": number}
            config = saver.put(config, checkpoint, {"step": number}, {})  # type: ignore[arg-type, assignment]
    return saver


def _steps(saver: HandoffSaver, thread: str) -> list[int]:
    return [item.metadata["step"] for item in saver.list({"configurable": {"thread_id": thread}})]


def test_prune_keeps_each_threads_newest_checkpoints(bucket_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    saver = _graph(bucket_url, {"run-1": 4, "ünïcode run": 3})
    assert main(["prune", bucket_url, "--keep", "2", "--dry-run"]) == 0
    assert "would remove 3 checkpoint(s) in 2 namespace(s)" in capsys.readouterr().out
    assert _steps(saver, "run-1") == [4, 3, 2, 1]
    assert main(["prune", bucket_url, "--keep", "2", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert sorted((r["thread_id"], len(r["kept"]), len(r["removed"])) for r in results) == [
        ("run-1", 2, 2),
        ("ünïcode run", 2, 1),
    ]
    assert _steps(saver, "run-1") == [4, 3]
    assert _steps(saver, "ünïcode run") == [3, 2]


def test_prune_of_one_thread_leaves_the_others(bucket_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    saver = _graph(bucket_url, {"run-1": 3, "run-2": 3})
    assert main(["prune", bucket_url, "--keep", "1", "--thread", "run-2"]) == 0
    assert "run-2 (root): kept 1, removed 2" in capsys.readouterr().out
    assert (_steps(saver, "run-1"), _steps(saver, "run-2")) == ([3, 2, 1], [3])
    assert main(["prune", bucket_url, "--keep", "1", "--thread", "nope"]) == 1
    assert "no LangGraph thread 'nope' under this root" in capsys.readouterr().err


def test_prune_on_one_saver_thread_names_the_root_to_prune(bucket_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _graph(bucket_url, {"ünïcode run": 2})
    part = encode_name("ünïcode run", "thread_id", bucket_url)
    assert main(["prune", f"{bucket_url}/{part}", "--keep", "1"]) == 1
    err = capsys.readouterr().err
    assert f"handoff prune {bucket_url} --thread ünïcode run --keep N" in err
    assert main(["prune", bucket_url + "-empty", "--keep", "1"]) == 1
    assert "neither a thread nor a LangGraph root" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["verify", "doctor", "show", "history"])
def test_reading_commands_say_it_is_a_saver(bucket_url: str, capsys: pytest.CaptureFixture[str], command: str) -> None:
    _graph(bucket_url, {"run-1": 2})
    for url, part in ((bucket_url, "root"), (f"{bucket_url}/run-1", "thread")):
        assert main([command, url]) == 1
        captured = capsys.readouterr()
        assert f"not a handoff thread but a LangGraph saver's {part}" in captured.err
        assert f"handoff prune {bucket_url} --keep N" in captured.err
        assert "not the library's" not in captured.out
