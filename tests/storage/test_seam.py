"""The storage seam's contract, on a local folder and on a real object store (SeaweedFS): the same tests.

What the layers above will stand on (issue 23): a create that exactly one racing writer wins, a
replace that an older writer loses, bounded reads, ordered listings, keys checked before use.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest

from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffTooLargeError,
    ObjectChangedError,
    ObjectExistsError,
    StorageConflictError,
)
from handoff_files.storage import Storage, open_storage
from tests.storage.conftest import child_env


def test_a_created_object_reads_back_with_its_etag(storage: Storage) -> None:
    etag = storage.create("history/00000001.json", b'{"generation": 1}')
    stored = storage.read("history/00000001.json", limit=1024)
    assert stored.data == b'{"generation": 1}'
    assert stored.etag == etag


def test_a_second_create_of_one_key_is_refused_and_the_first_stands(storage: Storage) -> None:
    storage.create("history/00000001.json", b"first")
    with pytest.raises(ObjectExistsError) as caught:
        storage.create("history/00000001.json", b"second")
    assert isinstance(caught.value, StorageConflictError)
    assert "history/00000001.json" in str(caught.value)
    assert storage.read("history/00000001.json", limit=64).data == b"first"


def test_a_replace_at_the_etag_read_wins_and_an_older_writer_then_loses(storage: Storage) -> None:
    first = storage.create("handoff.json", b"generation 1")
    second = storage.replace("handoff.json", b"generation 2", first)
    assert second != first
    with pytest.raises(ObjectChangedError, match=r"handoff\.json"):
        storage.replace("handoff.json", b"generation 1 again", first)  # a writer that read generation 1
    assert storage.read("handoff.json", limit=64) == storage.read("handoff.json", limit=64)
    assert storage.read("handoff.json", limit=64).data == b"generation 2"
    assert storage.read("handoff.json", limit=64).etag == second


def test_a_replace_of_an_object_that_is_gone_is_a_conflict(storage: Storage) -> None:
    etag = storage.create("state.json", b"{}")
    storage.remove("state.json")
    with pytest.raises(ObjectChangedError):
        storage.replace("state.json", b"{}", etag)


def test_reading_what_is_not_there_is_not_found(storage: Storage) -> None:
    with pytest.raises(HandoffNotFoundError):
        storage.read("history/00000009.json", limit=64)
    storage.create("history/00000001.json", b"x")
    with pytest.raises(HandoffNotFoundError):
        storage.read("history/00000009.json", limit=64)


def test_a_read_past_its_limit_is_refused(storage: Storage) -> None:
    storage.create("big.json", b"x" * 5000)
    with pytest.raises(HandoffTooLargeError, match="5000 bytes"):
        storage.read("big.json", limit=4999)
    assert len(storage.read("big.json", limit=5000).data) == 5000


def test_a_listing_holds_every_key_under_the_prefix_in_name_order(storage: Storage) -> None:
    assert storage.list("history/") == []
    for name in ("history/00000003.json", "history/00000001.json", "history/00000002.json", "state.json"):
        storage.create(name, b"x")
    storage.create("journal/0000000001-aaaa.json", b"x")
    assert storage.list("history/") == ["history/00000001.json", "history/00000002.json", "history/00000003.json"]
    assert storage.list("history/00000002") == ["history/00000002.json"]
    assert storage.list() == [
        "history/00000001.json",
        "history/00000002.json",
        "history/00000003.json",
        "journal/0000000001-aaaa.json",
        "state.json",
    ]


def test_remove_removes_and_removing_again_is_no_error(storage: Storage) -> None:
    storage.create("inbox/r1.json", b"x")
    storage.remove("inbox/r1.json")
    storage.remove("inbox/r1.json")
    assert storage.list("inbox/") == []
    storage.create("inbox/r1.json", b"made anew")  # a removed key can be created again
    assert storage.read("inbox/r1.json", limit=64).data == b"made anew"


@pytest.mark.parametrize(
    "key",
    ["", "../escape.json", "history/../../x", "/absolute.json", "a//b", "history/", ".hidden", "a/./b", "é.json"],
)
def test_a_key_this_library_never_writes_is_refused_before_any_request(storage: Storage, key: str) -> None:
    for call in (
        lambda: storage.read(key, limit=64),
        lambda: storage.create(key, b"x"),
        lambda: storage.replace(key, b"x", "etag"),
        lambda: storage.remove(key),
    ):
        with pytest.raises(HandoffError, match="not a storage key"):
            call()


_RACER = """
import sys
from handoff_files.foundation.errors import ObjectExistsError
from handoff_files.storage import open_storage
store = open_storage(sys.argv[1])
sys.stdin.readline()  # all start together
try:
    store.create("history/00000002.json", ("writer " + sys.argv[2]).encode())
except ObjectExistsError:
    print("lost")
else:
    print("won")
"""


def test_eight_processes_racing_to_create_one_generation_have_exactly_one_winner(storage: Storage) -> None:
    """Writers that share nothing but the store (separate processes, each its own client): one commit."""
    storage.create("history/00000001.json", b"generation 1")
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, storage.where, str(n)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=child_env(),
        )
        for n in range(8)
    ]
    for racer in racers:  # every one waits on its stdin: go, all of them, before any output is read
        assert racer.stdin is not None
        racer.stdin.write("go\n")
        racer.stdin.flush()
    outcomes = [racer.communicate(timeout=120)[0].strip() for racer in racers]
    assert [racer.returncode for racer in racers] == [0] * 8
    assert Counter(outcomes) == {"won": 1, "lost": 7}
    winner = outcomes.index("won")
    assert storage.read("history/00000002.json", limit=64).data == f"writer {winner}".encode()


def test_open_storage_names_a_folder_or_a_bucket_by_what_it_is_given(storage: Storage) -> None:
    again = open_storage(storage.where)
    assert type(again) is type(storage)
    assert again.where == storage.where
    storage.create("a.json", b"x")
    assert again.read("a.json", limit=8).data == b"x"


def test_text_given_as_data_is_refused_on_both(storage: Storage, tmp_path_factory: pytest.TempPathFactory) -> None:
    """obstore takes a str for the path of a local file to upload: the seam never lets one through."""
    secret = tmp_path_factory.mktemp("secret") / "secret.txt"
    secret.write_text("not to be uploaded")
    with pytest.raises(HandoffError, match="must be bytes, not str"):
        storage.create("a.json", str(secret))  # type: ignore[arg-type]
    assert storage.list() == []


def test_read_changed_gives_nothing_while_the_object_is_at_the_etag_and_the_new_bytes_after(storage: Storage) -> None:
    first = storage.create("handoff.json", b"one")
    assert storage.read_changed("handoff.json", first, limit=1024) is None  # on a bucket: a 304, no body
    second = storage.replace("handoff.json", b"two", first)
    changed = storage.read_changed("handoff.json", first, limit=1024)
    assert changed is not None
    assert (changed.data, changed.etag) == (b"two", second)
    assert storage.read_changed("handoff.json", second, limit=1024) is None
