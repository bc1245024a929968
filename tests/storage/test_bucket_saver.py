"""``HandoffSaver("s3://…")``: LangGraph's checkpointer on the real object store (SeaweedFS).

LangGraph's own conformance suite runs on it in tests/langgraph/test_conformance.py; here: a real
graph across two processes, what the suite does not check (a special channel's last write wins, a
regular channel's first), and hostile objects (damaged, moved, typed to run code) refused by name.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import subprocess
import sys
import threading
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import Checkpoint, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.types import ERROR

from handoff_files import HandoffError, HandoffValidationError
from handoff_files.langgraph import HandoffSaver
from handoff_files.langgraph.bucket_keys import sealed
from handoff_files.langgraph.bucket_saver import BucketSaver
from handoff_files.langgraph.threads import DamagedCheckpointWarning
from handoff_files.storage import BucketStorage
from tests.langgraph.graph_app import step

ROOT = Path(__file__).resolve().parents[2]


def _comparable(result: Any) -> dict[str, Any]:
    comparable: dict[str, Any] = json.loads(json.dumps(result, default=str))
    return comparable


def _graph_step(url: str, action: str) -> dict[str, Any]:
    """One step of tests/langgraph/graph_app.py in a process of its own, on the bucket (another "host")."""
    env = dict(os.environ) | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "tests.langgraph.graph_app", url, "thread-1", action],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return _comparable(json.loads(done.stdout))


def test_a_graph_paused_on_one_host_resumes_on_another_as_in_memory(bucket_url: str) -> None:
    memory = InMemorySaver()
    expected_paused = _comparable(step(memory, "thread-1", "start"))
    expected_done = _comparable(step(memory, "thread-1", "resume"))
    assert _graph_step(bucket_url, "start") == expected_paused
    assert _graph_step(bucket_url, "resume") == expected_done
    saver = HandoffSaver(bucket_url)
    assert isinstance(saver, BucketSaver)
    assert repr(saver) == f"HandoffSaver({bucket_url!r})"
    keys = BucketStorage(bucket_url).list("")
    assert keys
    assert all(key.startswith("thread-1/") for key in keys)
    assert any("/checkpoints/" in key for key in keys)
    assert any("/writes/" in key for key in keys)


def _checkpoint(number: int) -> Checkpoint:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"count": number}
    checkpoint["channel_versions"] = {"count": number}
    return checkpoint


def _put(saver: HandoffSaver, thread: str, number: int, parent: str | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    if parent is not None:
        config["configurable"]["checkpoint_id"] = parent
    stored: dict[str, Any] = saver.put(config, _checkpoint(number), {"step": number}, {"count": number})  # type: ignore[arg-type, assignment]
    return stored


def test_a_special_channels_last_write_wins_and_a_regular_channels_first(bucket_url: str) -> None:
    saver = HandoffSaver(bucket_url)
    stored = _put(saver, "t", 1)
    saver.put_writes(stored, [("ch", "first"), (ERROR, "first error")], "task-1")  # type: ignore[arg-type]
    saver.put_writes(stored, [("ch", "second"), (ERROR, "second error")], "task-1")  # type: ignore[arg-type]
    found = saver.get_tuple(stored)  # type: ignore[arg-type]
    assert found is not None
    assert sorted(found.pending_writes or []) == [("task-1", ERROR, "second error"), ("task-1", "ch", "first")]


def test_names_of_any_form_round_trip_and_a_name_too_long_is_refused(bucket_url: str) -> None:
    saver = HandoffSaver(bucket_url)
    for thread in ["importer-fix", "ünïcode thread", "a:b|c", ""]:
        stored = _put(saver, thread, 1)
        found = saver.get_tuple(stored)  # type: ignore[arg-type]
        assert found is not None
        assert found.config["configurable"]["thread_id"] == thread
    assert {item.config["configurable"]["thread_id"] for item in saver.list(None)} == {
        "importer-fix",
        "ünïcode thread",
        "a:b|c",
        "",
    }
    with pytest.raises(HandoffValidationError, match="too long for a key on object storage"):
        _put(saver, "x" * 30 + ":" + "y" * 60, 1)


def test_keep_leaves_the_newest_checkpoints(bucket_url: str) -> None:
    saver = HandoffSaver(bucket_url, keep=2)
    parent = None
    for number in range(1, 6):
        parent = _put(saver, "t", number, parent)["configurable"]["checkpoint_id"]
    steps = [item.metadata["step"] for item in saver.list({"configurable": {"thread_id": "t"}})]
    assert steps == [5, 4]


def _object_of(saver: HandoffSaver, bucket_url: str, stored: dict[str, Any]) -> str:
    [key] = [k for k in BucketStorage(bucket_url).list("t/") if stored["configurable"]["checkpoint_id"] in k]
    return key


def test_a_damaged_checkpoint_is_named_never_returned_and_passed_over_in_a_listing(bucket_url: str) -> None:
    saver = HandoffSaver(bucket_url)
    first = _put(saver, "t", 1)
    second = _put(saver, "t", 2, first["configurable"]["checkpoint_id"])
    storage = BucketStorage(bucket_url)
    key = _object_of(saver, bucket_url, second)
    stored = storage.read(key, limit=1 << 20)
    storage.replace(key, stored.data.replace(b'"step": 2', b'"step": 9'), stored.etag)
    with pytest.raises(HandoffError, match="does not match its seal") as caught:
        saver.get_tuple(second)  # type: ignore[arg-type]
    assert caught.value.path == f"{bucket_url}/{key}"
    with pytest.raises(HandoffError, match="does not match its seal"):
        saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})  # the newest: never an older one
    with warnings.catch_warnings(record=True) as caught_warnings:
        warnings.simplefilter("always")
        listed = [item.metadata["step"] for item in saver.list({"configurable": {"thread_id": "t"}})]
    assert listed == [1]
    assert [w.category for w in caught_warnings] == [DamagedCheckpointWarning]


def test_a_checkpoint_copied_under_another_threads_key_is_refused(bucket_url: str) -> None:
    saver = HandoffSaver(bucket_url)
    stored = _put(saver, "t", 1)
    storage = BucketStorage(bucket_url)
    key = _object_of(saver, bucket_url, stored)
    storage.create("u/" + key.split("/", 1)[1], storage.read(key, limit=1 << 20).data)
    with pytest.raises(HandoffError, match="another thread's or checkpoint's record"):
        saver.get_tuple({"configurable": {"thread_id": "u", "checkpoint_ns": ""}})


def test_a_value_typed_to_run_code_is_refused_on_reading(bucket_url: str, tmp_path: Path) -> None:
    """A sealed checkpoint whose value is a pickle (which would run code when read): refused, nothing run."""
    saver = HandoffSaver(bucket_url)
    stored = _put(saver, "t", 1)
    storage = BucketStorage(bucket_url)
    key = _object_of(saver, bucket_url, stored)
    record = json.loads(storage.read(key, limit=1 << 20).data)
    record.pop("seal")
    marker = tmp_path / "ran"
    payload = pickle.dumps(_Boom(str(marker)))
    record["channel_values"]["count"] = {"serde": "pickle", "base64": base64.b64encode(payload).decode()}
    storage.replace(key, sealed(record), storage.read(key, limit=1 << 20).etag)
    with pytest.raises(HandoffValidationError, match="pickle"):
        saver.get_tuple(stored)  # type: ignore[arg-type]
    assert not marker.exists()


class _Boom:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (Path(self.path),))


def test_copy_thread_copies_every_checkpoint_and_refuses_a_target_that_has_some(bucket_url: str) -> None:
    saver = HandoffSaver(bucket_url)
    first = _put(saver, "src", 1)
    second = _put(saver, "src", 2, first["configurable"]["checkpoint_id"])
    saver.put_writes(second, [("ch", "pending")], "task")  # type: ignore[arg-type]
    saver.copy_thread("src", "dst")
    copied = saver.get_tuple({"configurable": {"thread_id": "dst", "checkpoint_ns": ""}})
    assert copied is not None
    assert copied.config["configurable"]["checkpoint_id"] == second["configurable"]["checkpoint_id"]
    assert copied.pending_writes == [("task", "ch", "pending")]
    assert [item.metadata["step"] for item in saver.list({"configurable": {"thread_id": "dst"}})] == [2, 1]
    with pytest.raises(HandoffError, match="already holds checkpoints"):
        saver.copy_thread("src", "dst")


def test_a_reader_never_sees_part_of_a_tasks_writes(bucket_url: str) -> None:
    """LangGraph takes a task with pending writes as done: a reader (a run resumed after a kill) seeing some of
    a task's writes would replay it half. A newcomer's run, killed mid-put_writes, resumed a step short."""
    saver = HandoffSaver(bucket_url)
    stored = _put(saver, "t", 1)
    seen: list[int] = []
    stop = threading.Event()

    def read() -> None:
        reader = HandoffSaver(bucket_url)
        while not stop.is_set():
            found = reader.get_tuple(stored)  # type: ignore[arg-type]
            assert found is not None
            seen.extend(Counter(task for task, _, _ in found.pending_writes or []).values())

    reading = threading.Thread(target=read)
    reading.start()
    try:
        for task in range(12):
            saver.put_writes(stored, [(f"ch{i}", i) for i in range(8)], f"task{task}")  # type: ignore[arg-type]
    finally:
        stop.set()
        reading.join(60)
    assert seen
    assert set(seen) == {8}
    found = saver.get_tuple(stored)  # type: ignore[arg-type]
    assert found is not None
    assert len(found.pending_writes or []) == 12 * 8
    assert [key.rsplit("/", 1)[1] for key in BucketStorage(bucket_url).list("t/_/writes/")] == sorted(
        f"task{task}.json" for task in range(12)
    )


def test_bad_settings_are_refused_as_on_a_folder(bucket_url: str) -> None:
    with pytest.raises(HandoffError, match="durability must be one of"):
        HandoffSaver(bucket_url, durability="bogus")  # type: ignore[arg-type]
    with pytest.raises(HandoffValidationError, match="not on object storage yet"):
        HandoffSaver(bucket_url, signing_key="keys/agent")
    with pytest.raises(HandoffError, match="write the scheme in lower case"):
        HandoffSaver("S3://bucket/graphs")
