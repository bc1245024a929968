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
from handoff_files.langgraph.threads import DamagedCheckpointWarning
from handoff_files.storage import BucketStorage


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
    assert "would remove 3 checkpoint(s) from 2 of 2 namespace(s)" in capsys.readouterr().out
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
    above = bucket_url.rpartition("/")[0]
    for url, said in (
        (bucket_url, "not a handoff thread but the root of"),
        (f"{bucket_url}/run-1", "not a handoff thread but the thread of"),
        (f"{bucket_url}/run-1/_", "not a handoff thread but the namespace of"),
        (above, "a prefix holding"),
    ):
        assert main([command, url]) == 1
        captured = capsys.readouterr()
        assert f"{said} a LangGraph saver's checkpoints (its root: {bucket_url})" in captured.err
        assert f"handoff prune {bucket_url} --keep N" in captured.err
        assert "not the library's" not in captured.out


def test_prune_keeps_the_newest_checkpoints_that_verify(bucket_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A damaged newest checkpoint is kept as evidence, never counted as one of the N: the graph resumes."""
    saver = _graph(bucket_url, {"run-1": 4})
    storage = BucketStorage(bucket_url)
    newest = max(key for key in storage.list("run-1/_/checkpoints/"))
    stored = storage.read(newest, limit=1 << 20)
    storage.replace(newest, stored.data.replace(b'"step"', b'"stEp"'), stored.etag)
    assert main(["prune", bucket_url, "--keep", "1"]) == 0
    assert "run-1 (root): kept 2, removed 2" in capsys.readouterr().out
    with pytest.warns(DamagedCheckpointWarning):
        assert _steps(saver, "run-1") == [3]
    storage.replace(newest, b"{}", storage.read(newest, limit=1 << 20).etag)
    for key in storage.list("run-1/_/checkpoints/"):
        if key != newest:
            data = storage.read(key, limit=1 << 20)
            storage.replace(key, data.data.replace(b'"step"', b'"stEp"'), data.etag)
    assert main(["prune", bucket_url, "--keep", "1"]) == 1  # none verifies: nothing removed
    assert "no checkpoint here verifies" in capsys.readouterr().err
    assert len(storage.list("run-1/_/checkpoints/")) == 2


def test_a_prefix_above_handoff_threads_is_named(bucket_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from handoff_files import HandoffStore

    HandoffStore(f"{bucket_url}/alpha", thread_id="alpha").save({"narrative": "a"})
    for command in ("verify", "doctor", "history", "show"):
        assert main([command, bucket_url]) == 1
        assert (
            f"a prefix of threads (alpha), not a thread: name one, e.g. {bucket_url}/alpha" in capsys.readouterr().err
        )


def test_thread_option_on_a_handoff_thread_is_refused(bucket_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from handoff_files import HandoffStore

    HandoffStore(bucket_url, thread_id="plain").save({"narrative": "a"})
    assert main(["prune", bucket_url, "--keep", "1", "--thread", "x"]) == 1
    assert "a handoff thread, not a LangGraph saver's root" in capsys.readouterr().err
