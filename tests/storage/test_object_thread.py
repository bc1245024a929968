"""A thread on the storage seam: the commit by create-if-absent, on a folder and on a real object store.

Racing writers share nothing but the store (separate processes): exactly one wins each generation
number, and with retries every one of them lands, in one chain with no number used twice.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import orjson
import pytest

from handoff_files.foundation.errors import HandoffValidationError, NoHandoffError
from handoff_files.signing.keys import create_key
from handoff_files.storage import Storage
from handoff_files.thread.objects import ObjectThread
from handoff_files.thread.signatures import checked_signer
from tests.storage.conftest import child_env


def _layers(text: str) -> dict[str, object]:
    return {"narrative": text, "state": {"data": {"said": text}}}


def test_saves_make_one_chain_and_restore_returns_the_newest(storage: Storage) -> None:
    thread = ObjectThread(storage, thread_id="importer-fix")
    receipts = [thread.save(_layers(f"step {n}")) for n in (1, 2, 3)]
    assert [r.generation for r in receipts] == [1, 2, 3]
    assert all(r.problems == () and r.conflicts == 0 for r in receipts)
    assert receipts[2].where == f"{storage.where}/history/00000003.json"
    restored = ObjectThread(storage.where).restore()  # another process's view: the URL or the folder alone
    assert restored.generation == 3
    assert restored.handoff.narrative == "step 3"
    assert restored.problems == ()
    parents = [orjson.loads(storage.read(f"history/0000000{n}.json", limit=1 << 20).data)["parent"] for n in (1, 2, 3)]
    assert parents == [None, receipts[0].checksum, receipts[1].checksum]
    # the readable copies followed: handoff.json is generation 3 byte for byte, state.json names it
    assert storage.read("handoff.json", limit=1 << 20).data == storage.read("history/00000003.json", limit=1 << 20).data
    mirror = orjson.loads(storage.read("state.json", limit=1 << 20).data)
    assert (mirror["generation"], mirror["seal"], mirror["state"]["data"]) == (
        3,
        receipts[2].checksum,
        {"said": "step 3"},
    )


def test_a_thread_with_nothing_in_it_restores_nothing_and_a_first_save_needs_an_id(storage: Storage) -> None:
    with pytest.raises(NoHandoffError, match="no generation here yet"):
        ObjectThread(storage).restore()
    with pytest.raises(HandoffValidationError, match="needs its id"):
        ObjectThread(storage).save(_layers("one"))
    ObjectThread(storage, thread_id="t1").save(_layers("one"))
    assert ObjectThread(storage).save(_layers("two")).generation == 2  # the id is the thread's now
    with pytest.raises(HandoffValidationError, match="not 'other'"):
        ObjectThread(storage, thread_id="other").save(_layers("three"))


def test_a_damaged_newest_generation_is_passed_over_and_named(storage: Storage) -> None:
    thread = ObjectThread(storage, thread_id="t1")
    thread.save(_layers("one"))
    second = thread.save(_layers("two"))
    document = orjson.loads(storage.read("history/00000002.json", limit=1 << 20).data)
    document["narrative"] = "rewritten, seal kept"
    storage.create("history/00000003.json", orjson.dumps({**document, "generation": 3}))
    restored = thread.restore()
    assert restored.generation == 2
    assert restored.handoff.seal is not None
    assert str(restored.handoff.seal) == second.checksum
    assert [p for p in restored.problems if p.startswith("history/00000003.json passed over")], restored.problems
    # the next save takes the next number (3 is used, damaged or not) and chains from the newest that verifies
    fourth = thread.save(_layers("four"))
    assert fourth.generation == 4
    assert orjson.loads(storage.read("history/00000004.json", limit=1 << 20).data)["parent"] == second.checksum


def test_an_older_writer_never_moves_the_readable_copy_back(storage: Storage) -> None:
    thread = ObjectThread(storage, thread_id="t1")
    thread.save(_layers("one"))
    newer = thread.save(_layers("two"))
    # a writer that committed generation 1 long ago and only now moves the copies on
    old = orjson.loads(storage.read("history/00000001.json", limit=1 << 20).data)
    said = thread._copies.advance("handoff.json", orjson.dumps(old), 1)  # the follow step alone
    assert said == "handoff.json holds generation 2 already (a newer writer's): left as it is"
    assert orjson.loads(storage.read("handoff.json", limit=1 << 20).data)["seal"]["digest"] in newer.checksum


def test_a_signed_thread_verifies_and_a_forged_generation_is_passed_over(
    storage: Storage, tmp_path_factory: pytest.TempPathFactory
) -> None:
    key = create_key(tmp_path_factory.mktemp("keys") / "agent")
    thread = ObjectThread(storage, thread_id="t1", signing_key=key)
    first = thread.save(_layers("one"))
    assert first.signed_by == key.fingerprint
    restored = thread.restore()
    report = checked_signer(restored.handoff, restored.where)
    assert report is not None
    assert report.fingerprint == key.fingerprint
    # someone who can write the bucket but holds no key: generation 2 with a recomputed seal, another's signature
    forged = orjson.loads(storage.read("history/00000001.json", limit=1 << 20).data)
    other = create_key(tmp_path_factory.mktemp("keys") / "mallory")
    from handoff_files.format import seal as sealing
    from handoff_files.thread.signatures import sign_document

    body = {k: v for k, v in forged.items() if k != "seal"} | {"generation": 2, "narrative": "forged"}
    body["seal"] = {"algorithm": "blake3", "digest": sealing.digest(sealing.canonical(body), "blake3")}
    sign_document(body, other)
    body["seal"]["signature"] = forged["seal"]["signature"]  # a genuine signature, over another seal
    storage.create("history/00000002.json", orjson.dumps(body))
    restored = thread.restore()
    assert restored.generation == 1
    assert [p for p in restored.problems if "history/00000002.json passed over" in p and "signature" in p]


_WRITER = """
import sys
from handoff_files.foundation.errors import ObjectExistsError
from handoff_files.thread.objects import ObjectThread
thread = ObjectThread(sys.argv[1], agent_id="racer", retries=int(sys.argv[3]))  # one agent on several hosts
after = None if sys.argv[4] == "-" else int(sys.argv[4])
sys.stdin.readline()  # all start together
try:
    receipt = thread.save({"narrative": "writer " + sys.argv[2]}, after=after)
except ObjectExistsError as exc:
    print("lost", exc)
else:
    print("won", receipt.generation, receipt.conflicts)
"""


def _race(storage: Storage, writers: int, retries: int, after: int | None = None) -> list[list[str]]:
    """*writers* processes saving at once (each told to go only when all are started)."""
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, storage.where, str(n), str(retries), "-" if after is None else str(after)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=child_env(),
        )
        for n in range(writers)
    ]
    for racer in racers:  # every one is waiting on its stdin: go, all of them, before any output is read
        assert racer.stdin is not None
        racer.stdin.write("go\n")
        racer.stdin.flush()
    outcomes = [racer.communicate(timeout=180)[0].split() for racer in racers]
    assert [racer.returncode for racer in racers] == [0] * writers, outcomes
    return outcomes


def test_eight_writers_racing_for_one_generation_exactly_one_wins_the_others_are_told(storage: Storage) -> None:
    """Each made its content from generation 1 (``after=1``): all want generation 2, and one gets it."""
    ObjectThread(storage, thread_id="t1", agent_id="racer").save(_layers("one"))
    outcomes = _race(storage, 8, retries=0, after=1)
    assert Counter(o[0] for o in outcomes) == {"won": 1, "lost": 7}
    assert [o[1:3] for o in outcomes if o[0] == "won"] == [["2", "0"]]
    for lost in (" ".join(o) for o in outcomes if o[0] == "lost"):  # told at the create, or at the head
        assert "generation 2 was committed by another writer first" in lost or "not 1: another writer" in lost
    assert ObjectThread(storage).generations() == [2, 1]


def test_eight_writers_racing_with_retries_all_land_in_one_chain_no_number_twice(storage: Storage) -> None:
    ObjectThread(storage, thread_id="t1", agent_id="racer").save(_layers("one"))
    outcomes = _race(storage, 8, retries=20)
    assert all(o[0] == "won" for o in outcomes), outcomes
    assert sorted(int(o[1]) for o in outcomes) == list(range(2, 10))
    thread = ObjectThread(storage)
    assert thread.generations() == list(range(9, 0, -1))
    documents = [orjson.loads(storage.read(f"history/{n:08d}.json", limit=1 << 20).data) for n in range(1, 10)]
    for before, after in itertools.pairwise(documents):  # one chain: each parent the seal before
        assert after["parent"] == f"blake3:{before['seal']['digest']}"
    assert thread.restore().generation == 9
    assert orjson.loads(storage.read("handoff.json", limit=1 << 20).data)["generation"] == 9


def test_two_writers_taking_turns_keep_the_chain_and_the_copies_at_the_newest(storage: Storage) -> None:
    """Each writer remembers its last head and the etags it left the copies at; the other's saves in between
    must make it read them again, never write a parent or a copy from what it remembered."""
    first, second = ObjectThread(storage, thread_id="t1"), ObjectThread(storage)
    receipts = []
    for step in range(3):
        receipts += [first.save(_layers(f"a{step}")), second.save(_layers(f"b{step}"))]
    assert [r.generation for r in receipts] == [1, 2, 3, 4, 5, 6]
    assert all(r.problems == () for r in receipts)
    for number in range(2, 7):
        parent = orjson.loads(storage.read(f"history/{number:08d}.json", limit=1 << 20).data)["parent"]
        assert parent == receipts[number - 2].checksum
    assert storage.read("handoff.json", limit=1 << 20).data == storage.read("history/00000006.json", limit=1 << 20).data
    assert orjson.loads(storage.read("state.json", limit=1 << 20).data)["generation"] == 6


def test_a_folder_thread_saves_in_a_forked_child_after_saving_in_its_parent(tmp_path: Path) -> None:
    """The copies go out on a thread pool: a child of fork() has none of its parent's threads and makes its own."""
    thread = ObjectThread(tmp_path / "store", thread_id="t1")
    thread.save(_layers("parent"))
    pid = os.fork()
    if pid == 0:  # the child: a save that hung on the parent's pool would never exit
        try:
            code = 0 if thread.save(_layers("child")).generation == 2 else 1
        finally:
            os._exit(code if "code" in locals() else 2)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        pytest.fail("the forked child's save hung")
    assert ObjectThread(tmp_path / "store").restore().handoff.narrative == "child"
