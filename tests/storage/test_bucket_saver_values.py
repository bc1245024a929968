"""Large values of the bucket saver: each an object of its own beside its checkpoint, checked by digest,
gone with its checkpoint, copied with its thread; a record too large for a reader is never written."""

from __future__ import annotations

import json
from typing import Any

import blake3
import pytest
from langgraph.checkpoint.base import Checkpoint, empty_checkpoint

from handoff_files import HandoffError, HandoffValidationError
from handoff_files.langgraph import HandoffSaver
from handoff_files.langgraph.bucket_keys import sealed
from handoff_files.storage import BucketStorage

BIG = "x" * (600 * 1024)  # over the 256 KiB threshold: an object of its own


def _put(saver: HandoffSaver, thread: str, values: dict[str, Any]) -> dict[str, Any]:
    checkpoint: Checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = dict.fromkeys(values, 1)
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    stored: dict[str, Any] = saver.put(config, checkpoint, {"step": 1}, dict.fromkeys(values, 1))  # type: ignore[arg-type, assignment]
    return stored


def _large(storage: BucketStorage, thread: str = "t") -> list[str]:
    return [key for key in storage.list(f"{thread}/") if "/blobs/" in key]


def test_a_large_value_is_an_object_of_its_own_and_reads_back_equal(bucket_url: str) -> None:
    saver = HandoffSaver(bucket_url)
    storage = BucketStorage(bucket_url)
    stored = _put(saver, "t", {"big": BIG, "small": 1})
    saver.put_writes(stored, [("big", BIG + "w")], "task")  # type: ignore[arg-type]
    [checkpoint_key] = [key for key in storage.list("t/") if "/checkpoints/" in key]
    assert len(storage.read(checkpoint_key, limit=1 << 20).data) < 4096  # the checkpoint stays readable
    large = _large(storage)
    assert len(large) == 2
    checkpoint_id = stored["configurable"]["checkpoint_id"]
    assert all(key.startswith(f"t/_/blobs/{checkpoint_id}/") for key in large)
    for key in large:  # named by the digest of its bytes
        assert key.rsplit("/", 1)[1] == blake3.blake3(storage.read(key, limit=1 << 21).data).hexdigest() + ".json"
    found = saver.get_tuple(stored)  # type: ignore[arg-type]
    assert found is not None
    assert found.checkpoint["channel_values"] == {"big": BIG, "small": 1}
    assert found.pending_writes == [("task", "big", BIG + "w")]


def test_a_damaged_or_missing_large_value_is_named_never_returned(bucket_url: str) -> None:
    saver = HandoffSaver(bucket_url)
    storage = BucketStorage(bucket_url)
    stored = _put(saver, "t", {"big": BIG})
    [key] = _large(storage)
    there = storage.read(key, limit=1 << 21)
    storage.replace(key, there.data.replace(b"xxx", b"yyy", 1), there.etag)
    with pytest.raises(HandoffError, match="do not hash to the digest") as caught:
        saver.get_tuple(stored)  # type: ignore[arg-type]
    assert caught.value.path == f"{bucket_url}/{key}"
    storage.remove(key)
    with pytest.raises(HandoffError, match="missing"):
        saver.get_tuple(stored)  # type: ignore[arg-type]


def test_a_planted_object_under_a_values_name_is_replaced_by_the_value(bucket_url: str) -> None:
    saver = HandoffSaver(bucket_url)
    storage = BucketStorage(bucket_url)
    stored = _put(saver, "t", {"big": BIG})
    [key] = _large(storage)
    storage.replace(key, b"planted", storage.read(key, limit=1 << 21).etag)
    checkpoint: Checkpoint = empty_checkpoint()
    checkpoint["id"] = stored["configurable"]["checkpoint_id"]  # the same checkpoint, put again
    checkpoint["channel_values"] = {"big": BIG}
    checkpoint["channel_versions"] = {"big": 1}
    again = saver.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, checkpoint, {}, {"big": 1})
    found = saver.get_tuple(again)
    assert found is not None
    assert found.checkpoint["channel_values"] == {"big": BIG}


def test_large_values_go_with_their_checkpoint_and_come_with_a_copy(bucket_url: str) -> None:
    saver = HandoffSaver(bucket_url, keep=1)
    storage = BucketStorage(bucket_url)
    _put(saver, "t", {"big": BIG})
    newest = _put(saver, "t", {"big": BIG + "2"})
    [key] = _large(storage)
    assert newest["configurable"]["checkpoint_id"] in key  # the first checkpoint's value went with it
    saver.copy_thread("t", "u")
    copied = saver.get_tuple({"configurable": {"thread_id": "u", "checkpoint_ns": ""}})
    assert copied is not None
    assert copied.checkpoint["channel_values"] == {"big": BIG + "2"}
    assert len(_large(storage, "u")) == 1
    saver.delete_thread("t")
    assert storage.list("t/") == []


def test_a_record_too_large_for_a_reader_is_refused_and_nothing_written(bucket_url: str) -> None:
    saver = HandoffSaver(bucket_url)
    many = {f"v{index}": "y" * (250 * 1024) for index in range(70)}  # each under the threshold; 17.5 MB in all
    with pytest.raises(HandoffValidationError, match="over the 16,777,216-byte limit for one record"):
        _put(saver, "t", many)
    assert BucketStorage(bucket_url).list("") == []


def test_a_reference_naming_no_digest_is_refused_naming_the_checkpoint(bucket_url: str) -> None:
    saver = HandoffSaver(bucket_url)
    storage = BucketStorage(bucket_url)
    stored = _put(saver, "t", {"big": BIG})
    [key] = [k for k in storage.list("t/") if "/checkpoints/" in k]
    there = storage.read(key, limit=1 << 20)
    record = json.loads(there.data)
    record.pop("seal")
    record["channel_values"]["big"] = {"blob": "../../../etc/passwd", "bytes": 5}
    storage.replace(key, sealed(record), there.etag)
    with pytest.raises(HandoffError, match="names no BLAKE3 digest") as caught:
        saver.get_tuple(stored)  # type: ignore[arg-type]
    assert caught.value.path == f"{bucket_url}/{key}"
