"""Another thread's generation copied into a bucket thread's ``history/``: it verifies, and is never taken as this
thread's (restore, history, verify, doctor --repair, prune, the next save), on SeaweedFS."""

from __future__ import annotations

import json

import pytest

from handoff_files import HandoffStore
from handoff_files.cli.main import main
from handoff_files.storage import BucketStorage
from handoff_files.thread.bucketdoctor import examine_bucket
from handoff_files.thread.bucketprune import prune_bucket
from handoff_files.thread.bucketstore import BucketThreadStore
from handoff_files.thread.bucketverify import verify_bucket


def _thread(url: str, thread_id: str, count: int) -> None:
    for step in range(1, count + 1):
        HandoffStore(url, thread_id=thread_id).save({"narrative": f"{thread_id} step {step}"})


def _plant(url: str, other: str, generation: int, at: int) -> None:
    """Copy *other*'s generation *generation* into the thread at *url* as generation *at*."""
    data = BucketStorage(other).read(f"history/{generation:08d}.json", limit=1 << 20).data
    BucketStorage(url).create(f"history/{at:08d}.json", data)


@pytest.fixture
def planted(bucket_url: str) -> str:
    """A thread of 3 generations, with generation 4 of another thread of 4 copied in as its generation 4."""
    other = bucket_url + "-other"
    _thread(bucket_url, "mine", 3)
    _thread(other, "theirs", 4)
    _plant(bucket_url, other, 4, 4)
    return bucket_url


def _store(url: str) -> BucketThreadStore:
    store = HandoffStore(url)
    assert isinstance(store, BucketThreadStore)
    return store


def test_restore_passes_another_threads_generation_over_and_says_so(planted: str) -> None:
    restored = _store(planted).restore()
    assert (restored.generation, restored.handoff.thread_id) == (3, "mine")
    assert len(restored.problems) == 1
    assert restored.problems[0].startswith("history/00000004.json passed over: it is generation 4 of another thread")
    assert "'theirs'" in restored.problems[0]
    assert "'mine'" in restored.problems[0]


def test_history_marks_it_and_a_renumbered_copy_as_damage(planted: str) -> None:
    storage = BucketStorage(planted)
    storage.create("history/00000009.json", storage.read("history/00000003.json", limit=1 << 20).data)
    entries = {entry.generation: entry for entry in _store(planted).history()}
    assert entries[9].problem == "its name says generation 9, it holds generation 3"
    assert entries[4].problem is not None
    assert "another thread" in entries[4].problem
    assert [number for number, entry in entries.items() if entry.current] == [3]
    assert [number for number, entry in entries.items() if entry.problem is None] == [3, 2, 1]


def test_verify_names_it_once_on_its_entry(planted: str) -> None:
    check = verify_bucket(planted)
    assert not check.ok
    problems = {entry.generation: entry.problem for entry in check.generations}
    assert problems[4] == "another thread's generation ('theirs' / 'theirs'), not 'mine''s"
    assert [problem for problem in check.problems if "another thread" in problem] == []


def test_doctor_repair_never_moves_the_copies_onto_it(planted: str) -> None:
    findings = examine_bucket(planted, repair=True)
    assert [f.level for f in findings if f.kind == "primary"] == ["ok"]
    storage = BucketStorage(planted)
    for key in ("handoff.json", "state.json"):
        held = json.loads(storage.read(key, limit=1 << 20).data)
        assert (held["generation"], held["thread_id"]) == (3, "mine")


def test_the_next_save_chains_on_this_threads_newest(planted: str) -> None:
    receipt = HandoffStore(planted, thread_id="mine").save({"narrative": "mine step 4"})
    assert receipt.generation == 5
    store = _store(planted)
    newest = store.restore().handoff
    assert (newest.generation, newest.thread_id, newest.parent) == (5, "mine", str(store.generation(3).handoff.seal))
    assert HandoffStore(planted).save({"narrative": "with no id given"}).generation == 6  # the id is this thread's


def test_prune_keeps_this_threads_newest_and_leaves_the_stranger_as_evidence(planted: str) -> None:
    kept, removed = prune_bucket(planted, 1)
    assert kept == ["history/00000004.json", "history/00000003.json"]
    assert removed == ["history/00000002.json", "history/00000001.json"]
    assert _store(planted).restore().generation == 3


def test_the_cli_shows_this_threads_newest(planted: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", planted]) == 0
    captured = capsys.readouterr()
    assert "mine step 3" in captured.out
    assert "theirs step" not in captured.out
    assert "passed over: it is generation 4 of another thread" in captured.out + captured.err


def test_the_cli_prune_says_why_it_kept_more_than_asked(planted: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prune", planted, "--keep", "1"]) == 0
    out = capsys.readouterr().out
    assert "kept 2 generation file(s): the newest 1 that verify and 1 newer that do not" in out
    assert "removed history/00000001.json" in out
