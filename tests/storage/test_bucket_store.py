"""``HandoffStore`` on a folder and on a bucket of a real object store: one API, the same answers.

The bucket is SeaweedFS on loopback (tests/storage/conftest.py); ``HandoffStore("s3://…")`` is a
:class:`~handoff_files.thread.bucketstore.BucketThreadStore`. Racing writers are separate processes
that share nothing but the store.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from handoff_files import HandoffStore, brief
from handoff_files.foundation.errors import (
    HandoffError,
    HandoffValidationError,
    NoHandoffError,
    RollbackError,
    WrongCodeError,
)
from handoff_files.signing.keys import SigningKey
from handoff_files.storage import BucketStorage, Storage
from handoff_files.thread.bucketstore import BucketThreadStore
from handoff_files.thread.objects import ObjectThread
from tests.storage.conftest import child_env


@pytest.fixture(params=["local", "bucket"])
def thread(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A thread not yet made: a folder's path, or an ``s3://`` URL on the test server."""
    if request.param == "local":
        return str(tmp_path / "importer-fix")
    return str(request.getfixturevalue("bucket_url"))


def _layers(text: str, **data: object) -> dict[str, object]:
    return {"narrative": text, "state": {"data": {"said": text, **data}}}


def test_save_restore_history_the_same_on_a_folder_and_a_bucket(thread: str) -> None:
    store = HandoffStore(thread, thread_id="importer-fix", agent_id="agent-a")
    assert isinstance(store, BucketThreadStore) == thread.startswith("s3://")
    receipts = [store.save(_layers(f"step {n}")) for n in (1, 2, 3)]
    assert [r.generation for r in receipts] == [1, 2, 3]
    assert all(r.problems == () for r in receipts)
    again = HandoffStore(thread)  # another process's view: the name alone
    restored = again.restore()
    assert (restored.generation, restored.handoff.narrative, restored.problems) == (3, "step 3", ())
    assert restored.handoff.parent == receipts[1].checksum
    assert restored.where.startswith(thread)
    assert (restored.url is not None) == thread.startswith("s3://")
    entries = again.history()
    assert [e.generation for e in entries if e.generation is not None][:3] == [3, 2, 1]
    assert [e.generation for e in entries if e.current] == [3]
    assert all(e.problem is None for e in entries)


def test_keep_removes_the_oldest_generations(thread: str) -> None:
    store = HandoffStore(thread, thread_id="importer-fix", keep=2)
    for n in range(1, 6):
        store.save(_layers(f"step {n}"))
    kept = {e.generation for e in HandoffStore(thread).history()}
    assert kept == {4, 5}
    assert HandoffStore(thread).restore().generation == 5


_UPDATER = """
import sys
from handoff_files import HandoffStore
store = HandoffStore(sys.argv[1])
def plus_one(restored):
    count = restored.handoff.state.data["count"] if restored else 0
    return {"narrative": f"count {count + 1}", "state": {"data": {"count": count + 1}}}
for _ in range(int(sys.argv[2])):
    store.update(plus_one)
"""


def test_update_from_racing_processes_loses_no_increment(thread: str) -> None:
    """update() is read-change-save as one: under the folder's lock, or as a compare-and-set on the bucket."""
    HandoffStore(thread, thread_id="counter").save({"narrative": "count 0", "state": {"data": {"count": 0}}})
    writers, each = 4, 5
    procs = [
        subprocess.Popen([sys.executable, "-c", _UPDATER, thread, str(each)], env=child_env(), stderr=subprocess.PIPE)
        for _ in range(writers)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err.decode()
    restored = HandoffStore(thread).restore()
    assert restored.handoff.state.data["count"] == writers * each
    assert restored.generation == 1 + writers * each  # one generation per increment, none reused


def test_acknowledge_takes_the_briefing_code_and_refuses_a_wrong_one(thread: str) -> None:
    store = HandoffStore(thread, thread_id="importer-fix")
    store.save(_layers("step 1"))
    restored = store.restore()
    with pytest.raises(WrongCodeError, match="not the acknowledgement code of generation 1"):
        store.acknowledge(restored, code="AAAA-AAAA")
    briefing = brief(restored)
    assert briefing.thread == (thread if thread.startswith("s3://") else Path(thread))
    assert briefing.code is not None
    assert thread in briefing.text
    assert store.acknowledge(restored, code=briefing.code.lower()).with_code


def test_bucket_events_are_objects_in_order(bucket_url: str) -> None:
    store = HandoffStore(bucket_url, thread_id="importer-fix")
    assert isinstance(store, BucketThreadStore)
    store.save(_layers("step 1"))
    store.note("session-start", "a session began", session="s1")
    store.acknowledge()
    with pytest.raises(HandoffValidationError):
        store.note("resumed", "posing as the library's own line")
    assert [e["event"] for e in store.events()] == ["session-start", "resumed"]
    assert store.holdings() == ["handoff.json", "history/", "journal/", "state.json"]


class _StaleView:
    """A real store whose first listing of ``history/`` is an old one: a writer that read the head long ago."""

    def __init__(self, real: Storage, stale: list[str]) -> None:
        self.real, self.stale = real, stale
        self.where = real.where

    def list(self, prefix: str = "") -> list[str]:
        if prefix == "history/" and self.stale:
            old, self.stale = self.stale, []
            return old
        return self.real.list(prefix)

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)


def test_a_stale_writer_never_reuses_a_number_retention_removed(storage: Storage) -> None:
    ObjectThread(storage, thread_id="t1", keep=2).save(_layers("step 1"))
    for n in range(2, 6):
        ObjectThread(storage, keep=2).save(_layers(f"step {n}"))
    assert ObjectThread(storage).generations() == [5, 4]  # 1 to 3 removed by retention
    stale = _StaleView(storage, ["history/00000001.json"])  # read when generation 1 was the head
    receipt = ObjectThread(stale, thread_id="t1", keep=2, retries=1).save(_layers("late"))  # type: ignore[arg-type]
    assert (receipt.generation, receipt.conflicts) == (6, 1)
    assert ObjectThread(storage).generations() == [6, 5]  # generation 2 was made, seen stale, removed
    assert ObjectThread(storage).restore().handoff.narrative == "late"


def test_a_pinned_bucket_thread_passes_an_unsigned_generation_over_and_refuses_a_rollback(
    bucket_url: str, alice: SigningKey
) -> None:
    store = HandoffStore(bucket_url, thread_id="importer-fix", signing_key=alice)
    for n in (1, 2, 3):
        assert store.save(_layers(f"step {n}")).problems == ()
    reader = HandoffStore(bucket_url, signing_key=False)
    restored = reader.restore()
    assert restored.signature is not None
    assert restored.signature.principal == "alice@example.com"
    # someone who can write the bucket commits an unsigned generation 4 (a valid seal, chained)
    forged = HandoffStore(bucket_url, signing_key=False).save(_layers("forged"))
    assert forged.generation == 4
    assert any("pinned" in p for p in forged.problems)
    restored = reader.restore()
    assert restored.generation == 3
    assert any("00000004.json passed over: not trusted: unsigned" in p for p in restored.problems)
    # and removes generations 3 and 4: an older generation than this user saw is a rollback
    raw = BucketStorage(bucket_url)
    raw.remove("history/00000004.json")
    raw.remove("history/00000003.json")
    with pytest.raises(RollbackError, match="you saved or restored generation 3"):
        reader.restore()
    assert reader.restore(accept_rollback=True).generation == 2
    assert reader.restore().generation == 2  # anchored there now


def test_another_agents_save_is_refused_as_in_a_folder(thread: str) -> None:
    HandoffStore(thread, thread_id="importer-fix", agent_id="agent-a").save(_layers("one"))
    with pytest.raises(HandoffValidationError, match="thread belongs to agent 'agent-a', not 'agent-b'"):
        HandoffStore(thread, agent_id="agent-b").save(_layers("two"))


def test_folder_only_operations_say_so_in_one_line(bucket_url: str) -> None:
    store = HandoffStore(bucket_url, thread_id="importer-fix")
    for call in (lambda: store.path, store.locked, store.seal, lambda: store.primary, store.init):
        with pytest.raises(HandoffError, match="only a thread in a folder has") as caught:
            call()
        assert bucket_url in str(caught.value)
        assert "\n" not in str(caught.value)
    with pytest.raises(HandoffValidationError, match="is JSON"):
        HandoffStore(bucket_url, format="yaml")
    with pytest.raises(NoHandoffError):
        store.restore()


def test_another_scheme_is_refused_never_a_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for url in ("gs://bucket/thread", "S3://bucket/thread", "file:///tmp/x"):
        with pytest.raises(HandoffError, match=r"only s3:// URLs|write the scheme in lower case"):
            HandoffStore(url).save(_layers("one"))
    assert list(tmp_path.iterdir()) == []


def test_the_bucket_copies_are_readable_json(bucket_url: str) -> None:
    HandoffStore(bucket_url, thread_id="importer-fix").save(_layers("step 1", files=3))
    raw = BucketStorage(bucket_url)
    mirror = orjson.loads(raw.read("state.json", limit=1 << 20).data)
    assert (mirror["generation"], mirror["state"]["data"]["files"]) == (1, 3)
    assert raw.read("handoff.json", limit=1 << 20).data == raw.read("history/00000001.json", limit=1 << 20).data


_SAVER = """
import sys
from handoff_files import HandoffStore
store = HandoffStore(sys.argv[1], agent_id="busy")  # one agent, on several hosts at once
for step in range(int(sys.argv[3])):
    print(store.save({"narrative": f"{sys.argv[2]} {step}"}).generation, flush=True)
"""


def test_racing_plain_saves_all_land_in_one_chain(thread: str) -> None:
    """A save another writer beat to its number is sealed again as the next one, as a folder's waits for its lock."""
    HandoffStore(thread, thread_id="busy").save(_layers("start"))
    writers, each = 4, 5
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _SAVER, thread, str(w), str(each)],
            env=child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for w in range(writers)
    ]
    numbers: list[int] = []
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err.decode()
        numbers += [int(line) for line in out.split()]
    assert sorted(numbers) == list(range(2, 2 + writers * each))  # every save acknowledged once, none reused
    assert HandoffStore(thread).restore().generation == 1 + writers * each


def test_a_first_save_takes_its_thread_id_from_the_name_as_in_a_folder(thread: str) -> None:
    receipt = HandoffStore(thread).save(_layers("one"))  # no thread_id: the folder's name, or the URL's last part
    assert receipt.generation == 1
    assert HandoffStore(thread).restore().handoff.thread_id == thread.rstrip("/").rsplit("/", 1)[-1]
