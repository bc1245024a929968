"""watch("s3://…"): a bucket thread polled with conditional GETs, each new generation delivered once, verified."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from bench.seaweed import SeaweedServer
from handoff_files import HandoffStore, Restored, watch
from handoff_files.foundation.errors import HandoffError, StorageUnavailableError
from handoff_files.storage import BucketStorage
from handoff_files.thread.objects import ObjectThread


def test_a_bucket_thread_is_polled_and_each_new_generation_delivered_once(bucket_url: str) -> None:
    store = HandoffStore(bucket_url, thread_id="watched")
    store.save({"narrative": "one"})
    seen: list[int] = []
    got = threading.Event()

    def on_change(restored: Restored) -> None:
        seen.append(restored.generation)
        got.set()

    with watch(bucket_url, on_change=on_change, rescan=0.1) as watcher:
        assert watcher.current is not None
        assert watcher.current.generation == 1
        assert watcher.where == bucket_url
        store.save({"narrative": "two"})
        assert watcher.wait_for(2, timeout=30) is not None
        store.save({"narrative": "three"})
        store.save({"narrative": "four"})
        found = watcher.wait_for(4, timeout=30)
        assert found is not None
        assert found.handoff.narrative == "four"
        assert found.url == f"{bucket_url}/history/00000004.json"
    assert seen == sorted(set(seen))  # never twice, never back
    assert seen[0] == 1
    assert seen[-1] == 4


def test_a_commit_whose_copies_never_followed_is_caught_by_the_full_restore(bucket_url: str) -> None:
    """handoff.json is only a hint: a writer killed between its commit and its copies leaves it behind, and
    the watch still delivers the commit (a full restore every few polls)."""
    HandoffStore(bucket_url, thread_id="watched").save({"narrative": "one"})
    raw = BucketStorage(bucket_url)
    hint = raw.read("handoff.json", limit=1 << 20).etag
    with watch(bucket_url, on_change=lambda _: None, rescan=0.05) as watcher:
        killed = ObjectThread(bucket_url)
        killed._copies.follow = lambda *_args: []  # type: ignore[method-assign]  # killed right after its commit
        assert killed.save({"narrative": "two"}).generation == 2
        found = watcher.wait_for(2, timeout=30)
        assert found is not None
        assert found.handoff.narrative == "two"
    assert raw.read("handoff.json", limit=1 << 20).etag == hint  # the hint never moved: the restore found it


def test_an_outage_is_reported_once_however_many_polls_meet_it(tmp_path: Path) -> None:
    """Each failed request's message carries its timing: the watch must still say the outage once."""
    server = SeaweedServer(tmp_path / "seaweedfs")
    server.start()
    try:
        with pytest.MonkeyPatch.context() as patch:
            for name, value in server.environment().items():
                patch.setenv(name, value)
            url = f"s3://{server.make_bucket()}/team/watched"
            HandoffStore(url, thread_id="watched").save({"narrative": "one"})
            errors: list[HandoffError] = []
            with watch(url, on_change=lambda _: None, on_error=errors.append, rescan=0.05) as watcher:
                server.stop(kill=True)
                time.sleep(3)
                assert watcher.current is not None
            assert len(errors) == 1
            assert isinstance(errors[0], StorageUnavailableError)
    finally:
        server.stop()
