"""The bucket saver against objects it did not write as they stand: sealed but odd records, another
spelling of a key, damaged checkpoints among those ``keep``, ``delete_for_runs`` and ``copy_thread`` meet."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from langgraph.checkpoint.base import Checkpoint, empty_checkpoint

from handoff_files import HandoffError
from handoff_files.langgraph import HandoffSaver
from handoff_files.langgraph.bucket_keys import decode_name, encode_name, parse_key, sealed
from handoff_files.langgraph.threads import DamagedCheckpointWarning
from handoff_files.storage import BucketStorage, Storage


def _put(saver: HandoffSaver, thread: str, number: int, *, run: str = "run-1") -> dict[str, Any]:
    checkpoint: Checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"count": number}
    checkpoint["channel_versions"] = {"count": number}
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    stored: dict[str, Any] = saver.put(config, checkpoint, {"step": number, "run_id": run}, {"count": number})  # type: ignore[arg-type, assignment]
    return stored


def _key_of(storage: Storage, stored: dict[str, Any]) -> str:
    [key] = [k for k in storage.list("") if f"/checkpoints/{stored['configurable']['checkpoint_id']}" in k]
    return key


def _reseal(storage: Storage, key: str, change: dict[str, Any], drop: tuple[str, ...] = ()) -> None:
    """Replace the object at *key* with its record changed, sealed again (as anyone who can write there can)."""
    stored = storage.read(key, limit=1 << 20)
    record = json.loads(stored.data)
    record.pop("seal")
    record.update(change)
    for name in drop:
        record.pop(name)
    storage.replace(key, sealed(record), stored.etag)


@pytest.mark.parametrize(
    ("change", "drop"),
    [({"metadata": 5}, ()), ({}, ("checkpoint",)), ({}, ("metadata",)), ({"checkpoint": {"json": 5}}, ())],
)
def test_a_sealed_checkpoint_of_the_wrong_shape_is_refused_by_name(
    bucket_url: str, change: dict[str, Any], drop: tuple[str, ...]
) -> None:
    saver = HandoffSaver(bucket_url)
    storage = BucketStorage(bucket_url)
    stored = _put(saver, "t", 1)
    key = _key_of(storage, stored)
    _reseal(storage, key, change, drop)
    with pytest.raises(HandoffError) as caught:
        saver.get_tuple(stored)  # type: ignore[arg-type]
    assert caught.value.path == f"{bucket_url}/{key}"
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert list(saver.list(None, filter={"step": 1})) == []
    assert [w.category for w in seen] == [DamagedCheckpointWarning]


@pytest.mark.parametrize("writes", [5, [{"idx": "0", "channel": "ch", "value": {"json": 1}}], [{"idx": 0}]])
def test_a_sealed_write_object_of_the_wrong_shape_is_refused_by_name(bucket_url: str, writes: object) -> None:
    saver = HandoffSaver(bucket_url)
    storage = BucketStorage(bucket_url)
    stored = _put(saver, "t", 1)
    saver.put_writes(stored, [("ch", "pending")], "task")  # type: ignore[arg-type]
    [key] = [k for k in storage.list("") if "/writes/" in k]
    _reseal(storage, key, {"writes": writes})
    with pytest.raises(HandoffError, match="not a handoff-files/langgraph-write@1 object as this saver writes"):
        saver.get_tuple(stored)  # type: ignore[arg-type]


def test_a_name_has_one_spelling_in_a_key() -> None:
    assert encode_name("a b", "name", "here") == "_meqge"
    assert decode_name("_meqge") == "a b"
    assert decode_name("_meqgf") is None  # the same bytes with padding bits set
    assert decode_name(encode_name("a b", "name", "here")[:1] + "mfrgg") is None  # "abc", whose key is "abc"
    assert parse_key("_mfrgg/_/checkpoints/c1.json") is None
    assert parse_key("abc/_/checkpoints/c1.json") is not None


def test_keep_passes_a_damaged_older_checkpoint_and_never_removes_the_one_just_put(bucket_url: str) -> None:
    saver = HandoffSaver(bucket_url, keep=2)
    storage = BucketStorage(bucket_url)
    first = _put(saver, "t", 1)
    second = _put(saver, "t", 2)
    key = _key_of(storage, first)
    stored = storage.read(key, limit=1 << 20)
    storage.replace(key, stored.data.replace(b'"step"', b'"stop"'), stored.etag)
    planted = key.rsplit("/", 1)[0] + "/zzzz.json"  # sorts after every real id: the "newest" by name
    storage.create(planted, b"{}")
    third = _put(saver, "t", 3)  # counts from its own checkpoint: the damaged first one goes, no error
    assert set(storage.list("t/")) == {planted, _key_of(storage, second), _key_of(storage, third)}
    found = saver.get_tuple(third)  # type: ignore[arg-type]
    assert found is not None
    assert found.metadata["step"] == 3


def test_delete_for_runs_passes_a_damaged_checkpoint_over_and_removes_the_rest(bucket_url: str) -> None:
    saver = HandoffSaver(bucket_url)
    storage = BucketStorage(bucket_url)
    damaged = _put(saver, "t", 1)
    _put(saver, "t", 2)
    _put(saver, "u", 1, run="run-2")
    key = _key_of(storage, damaged)
    _reseal(storage, key, {"metadata": 5})
    with pytest.warns(DamagedCheckpointWarning, match="passed over"):
        saver.delete_for_runs(["run-1"])
    left = [k for k in storage.list("") if "/checkpoints/" in k]
    assert len(left) == 2
    assert key in left
    assert any(k.startswith("u/") for k in left)


def test_copy_thread_refuses_a_target_holding_only_writes(bucket_url: str) -> None:
    saver = HandoffSaver(bucket_url)
    _put(saver, "src", 1)
    stray = _put(saver, "dst", 1)
    saver.put_writes(stray, [("ch", "pending")], "task")  # type: ignore[arg-type]
    storage = BucketStorage(bucket_url)
    storage.remove(_key_of(storage, stray))  # dst holds writes, no checkpoint
    with pytest.raises(HandoffError, match="already holds checkpoints or writes"):
        saver.copy_thread("src", "dst")


def test_a_failed_copy_removes_what_it_wrote_and_nothing_else(bucket_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store failing mid-copy cannot be had on demand from SeaweedFS: its create is made to fail at the
    third object, after another writer's object lands under the target (which must survive the undo)."""
    saver = HandoffSaver(bucket_url)
    for number in range(1, 4):
        _put(saver, "src", number)
    storage = saver.storage  # type: ignore[attr-defined]
    real_create = storage.create
    calls = []

    def failing_create(key: str, data: bytes) -> Any:
        calls.append(key)
        if len(calls) == 3:
            real_create("dst/theirs.json", b"{}")
            raise HandoffError(key, "the store failed")
        return real_create(key, data)

    monkeypatch.setattr(storage, "create", failing_create)
    with pytest.raises(HandoffError, match="the store failed"):
        saver.copy_thread("src", "dst")
    assert BucketStorage(bucket_url).list("dst/") == ["dst/theirs.json"]
