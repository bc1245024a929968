"""The retention record on a bucket: ``retention.json`` written before a prune, read by ``handoff verify``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from handoff_files import HandoffStore
from handoff_files.cli.main import main
from handoff_files.foundation.errors import HandoffValidationError
from handoff_files.signing.keys import SigningKey, create_key
from handoff_files.storage import BucketStorage
from handoff_files.thread.bucketprune import prune_bucket
from handoff_files.thread.bucketverify import verify_bucket


def _saves(url: str, count: int, **options: object) -> None:
    for step in range(1, count + 1):
        HandoffStore(url, thread_id="kept", keep=2, **options).save({"narrative": f"step {step}"})  # type: ignore[arg-type]


def test_pruned_generations_are_told_from_lost_ones(bucket_url: str) -> None:
    _saves(bucket_url, 5)
    storage = BucketStorage(bucket_url)
    assert storage.list("history/") == ["history/00000004.json", "history/00000005.json"]
    record = json.loads(storage.read("retention.json", limit=1 << 14).data)
    assert (record["kind"], record["thread_id"], record["keep"]) == ("handoff-files/retention", "kept", 2)
    check = verify_bucket(bucket_url)
    assert check.ok, check.problems
    assert check.retention is not None
    assert check.retention.startswith("generations 1 to 3 pruned (retention.json: keep 2")


def test_without_its_record_a_pinned_threads_missing_generations_are_not_accounted_for(
    bucket_url: str, alice: SigningKey
) -> None:
    _saves(bucket_url, 5, signing_key=alice)
    assert verify_bucket(bucket_url).ok
    BucketStorage(bucket_url).remove("retention.json")  # whoever removed generations 1 to 3 removes it too
    check = verify_bucket(bucket_url)
    assert not check.ok
    assert "generations 1 to 3 not kept, and no retention record says they were pruned (lost or removed?)" in (
        check.problems
    )


def test_a_record_edited_since_it_was_signed_cannot_be_used(bucket_url: str, alice: SigningKey) -> None:
    _saves(bucket_url, 4, signing_key=alice)
    storage = BucketStorage(bucket_url)
    stored = storage.read("retention.json", limit=1 << 14)
    storage.replace("retention.json", stored.data.replace(b'"keep": 2', b'"keep": 3'), stored.etag)
    check = verify_bucket(bucket_url)
    assert any(problem.startswith("the retention record cannot be used") for problem in check.problems)


@pytest.mark.parametrize("keep", [3, 5])
def test_no_record_is_written_before_anything_is_pruned(bucket_url: str, keep: int) -> None:
    for step in range(3):
        HandoffStore(bucket_url, thread_id="kept", keep=keep).save({"narrative": f"step {step}"})
    assert BucketStorage(bucket_url).list("retention") == []


def test_handoff_prune_on_a_bucket_keeps_the_newest_and_records_it(
    bucket_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for step in range(5):
        HandoffStore(bucket_url, thread_id="kept").save({"narrative": f"step {step}"})
    assert main(["prune", bucket_url, "--keep", "2", "--dry-run"]) == 0
    assert "would remove 3" in capsys.readouterr().out
    assert len(BucketStorage(bucket_url).list("history/")) == 5
    assert main(["prune", bucket_url, "--keep", "2", "--json"]) == 0
    pruned = json.loads(capsys.readouterr().out)
    assert (pruned["kept"], pruned["removed"]) == (
        ["00000005.json", "00000004.json"],
        ["00000003.json", "00000002.json", "00000001.json"],
    )
    check = verify_bucket(bucket_url)
    assert check.ok, check.problems
    assert check.retention is not None
    assert check.retention.startswith("generations 1 to 3 pruned")


def test_prune_and_migrate_of_a_url_that_cannot_be_say_so_in_one_line(
    bucket_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["prune", bucket_url, "--keep", "2"]) == 1
    assert main(["migrate", bucket_url]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"handoff: {bucket_url}: neither a thread nor a LangGraph root: it holds no handoff generation and no "
        "LangGraph checkpoint",
        f"handoff: {bucket_url}: a thread on object storage is written at the current version only",
    ]


def test_prune_keeps_the_newest_generations_that_verify_not_the_newest_names(bucket_url: str) -> None:
    for step in range(3):
        HandoffStore(bucket_url, thread_id="kept").save({"narrative": f"step {step}"})
    storage = BucketStorage(bucket_url)
    good = storage.read("history/00000003.json", limit=1 << 20).data
    storage.create("history/00000009.json", good.replace(b"step 2", b"step 9"))  # planted: its seal fails
    kept, removed = prune_bucket(bucket_url, 1)
    assert (kept, removed) == (
        ["history/00000009.json", "history/00000003.json"],
        ["history/00000002.json", "history/00000001.json"],
    )
    assert HandoffStore(bucket_url).restore().handoff.narrative == "step 2"


def test_prune_removes_nothing_when_no_generation_verifies(bucket_url: str) -> None:
    HandoffStore(bucket_url, thread_id="kept").save({"narrative": "step"})
    storage = BucketStorage(bucket_url)
    stored = storage.read("history/00000001.json", limit=1 << 20)
    storage.replace("history/00000001.json", stored.data.replace(b'"step"', b'"stop"'), stored.etag)
    storage.create("history/00000002.json", b"{}")
    with pytest.raises(HandoffValidationError, match="no generation in history/ verifies"):
        prune_bucket(bucket_url, 1)
    assert storage.list("history/") == ["history/00000001.json", "history/00000002.json"]


def test_prune_of_a_pinned_thread_keeps_the_newest_a_trusted_key_signed(
    bucket_url: str, alice: SigningKey, tmp_path: Path
) -> None:
    mallory = create_key(tmp_path / "mallory")  # not in allowed_signers
    for step in range(3):
        HandoffStore(bucket_url, thread_id="kept", signing_key=alice).save({"narrative": f"step {step}"})
    HandoffStore(bucket_url, signing_key=mallory).save({"narrative": "not alice"})
    HandoffStore(bucket_url).save({"narrative": "unsigned"})
    kept, removed = prune_bucket(bucket_url, 1)
    assert kept == ["history/00000005.json", "history/00000004.json", "history/00000003.json"]
    assert removed == ["history/00000002.json", "history/00000001.json"]


def test_a_record_removed_after_this_process_read_it_is_written_again_before_the_next_prune(bucket_url: str) -> None:
    _saves(bucket_url, 4)
    storage = BucketStorage(bucket_url)
    storage.remove("retention.json")  # another writer, or a person, meanwhile
    HandoffStore(bucket_url, keep=2).save({"narrative": "step 5"})
    assert storage.list("retention") == ["retention.json"]
    check = verify_bucket(bucket_url)
    assert check.ok, check.problems
