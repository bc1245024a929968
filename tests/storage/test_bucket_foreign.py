"""Another thread's generation copied into a bucket thread's ``history/``: it verifies, and is never taken as this
thread's (restore, history, verify, doctor --repair, prune, the next save), on SeaweedFS."""

from __future__ import annotations

import json

import pytest

from handoff_files import HandoffStore, HandoffValidationError, ObjectThread
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
    assert problems[4] == "another thread's generation ('theirs' / 'theirs'), not 'mine'"
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


@pytest.fixture
def planted_below(bucket_url: str) -> str:
    """A thread pruned to its newest (its retention record says whose), then another thread's generation 1
    copied into the number retention freed: the oldest object is now the stranger's."""
    other = bucket_url + "-other"
    _thread(bucket_url, "mine", 3)
    prune_bucket(bucket_url, 1)
    _thread(bucket_url, "mine", 1)  # generation 4
    _thread(other, "theirs", 5)
    _plant(bucket_url, other, 1, 1)
    return bucket_url


def test_a_stranger_below_the_oldest_never_outranks_the_retention_record(planted_below: str) -> None:
    restored = _store(planted_below).restore()
    assert (restored.generation, restored.handoff.thread_id, restored.problems) == (4, "mine", ())
    entries = {entry.generation: entry for entry in _store(planted_below).history()}
    assert [number for number, entry in entries.items() if entry.problem is None] == [4, 3]
    assert entries[1].problem is not None
    assert "of another thread ('theirs' / 'theirs'), not of this thread 'mine'" in entries[1].problem
    fresh = ObjectThread(planted_below)  # knows nothing of the thread: the record is what it goes by
    found, problems = fresh.newest_of([1])
    assert found is None
    assert "not of this thread 'mine' (its retention record's)" in problems[0]
    check = verify_bucket(planted_below)
    assert {entry.generation: entry.problem for entry in check.generations}[1] == (
        "another thread's generation ('theirs' / 'theirs'), not 'mine'"
    )
    assert [problem for problem in check.problems if "another thread" in problem] == []
    assert HandoffStore(planted_below).save({"narrative": "on"}).generation == 5
    assert _store(planted_below).restore().handoff.thread_id == "mine"
    kept, removed = prune_bucket(planted_below, 1)
    assert (kept, removed) == (
        ["history/00000005.json"],
        ["history/00000004.json", "history/00000003.json", "history/00000001.json"],
    )


def test_a_store_that_knows_its_thread_never_takes_a_strangers_generation(bucket_url: str) -> None:
    """No retention record to go by: a store given the id, or one that saved or read the thread, still knows it."""
    other = bucket_url + "-other"
    _thread(bucket_url, "mine", 3)
    _thread(other, "theirs", 2)
    running = _store(bucket_url)
    assert running.restore().generation == 3
    BucketStorage(bucket_url).remove("history/00000001.json")  # removed by hand: no record says whose it was
    _plant(bucket_url, other, 1, 1)
    for store in (running, HandoffStore(bucket_url, thread_id="mine"), _store(bucket_url)):  # the last: state.json's
        restored = store.restore()
        assert restored.handoff.thread_id == "mine"
        assert store.save({"narrative": "mine goes on"}).problems == ()
    assert [_store(bucket_url).restore().generation] == [6]
    check = verify_bucket(bucket_url)  # verify goes by the id restore goes by (here state.json's)
    assert {entry.generation: entry.problem for entry in check.generations}[1] == (
        "another thread's generation ('theirs' / 'theirs'), not 'mine'"
    )
    BucketStorage(bucket_url).remove("state.json")  # nothing the writers wrote says whose: the oldest decides
    fresh = ObjectThread(bucket_url)
    found, problems = fresh.newest_of(fresh.generations())  # the known limit: said, on every one passed over
    assert found is not None
    assert found.thread_id == "theirs"
    assert "not of this thread 'theirs' (its oldest generation's)" in problems[0]


def test_show_of_the_strangers_number_refuses_it(planted: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", planted, "--generation", "4"]) == 1
    assert "it is generation 4 of another thread ('theirs' / 'theirs')" in capsys.readouterr().err
    assert main(["show", planted, "--generation", "3"]) == 0


def test_objects_at_names_no_writer_gives_are_told(bucket_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _thread(bucket_url, "mine", 1)
    storage = BucketStorage(bucket_url)
    data = storage.read("history/00000001.json", limit=1 << 20).data
    for key in ("history/foo.json", "history/00000001.json.bak", "history/1.json"):
        storage.create(key, data)
    findings = examine_bucket(bucket_url)
    [stray] = [f for f in findings if f.what.startswith("in history/, not the library's")]
    assert (stray.level, stray.what) == (
        "warning",
        "in history/, not the library's: history/00000001.json.bak, history/1.json, history/foo.json",
    )
    storage.create("history/9223372036854775807.json", data)  # the last number there is
    with pytest.raises(
        HandoffValidationError, match=r"the newest is history/9223372036854775807\.json: the next passes"
    ):
        HandoffStore(bucket_url).save({"narrative": "more"})


def test_the_log_tells_no_save_of_a_copy(planted: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["log", planted]) == 0
    captured = capsys.readouterr()
    assert "saved generation 4" not in captured.out
    assert "saved generation 3" in captured.out
    assert "history/00000004.json: it is generation 4 of another thread" in captured.out + captured.err


def test_a_generation_is_listed_only_under_its_one_name(bucket_url: str) -> None:
    """The folder's rule for a generation's name (foundation.names): another width or number 0 is not one."""
    _thread(bucket_url, "mine", 2)
    storage = BucketStorage(bucket_url)
    data = storage.read("history/00000002.json", limit=1 << 20).data
    for key in ("history/000000003.json", "history/00000000.json"):
        storage.create(key, data)
    assert ObjectThread(bucket_url).generations() == [2, 1]
    assert HandoffStore(bucket_url).save({"narrative": "on"}).generation == 3
