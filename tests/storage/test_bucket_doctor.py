"""``handoff doctor s3://…``: a bucket thread's generations, readable copies and strangers' objects, on SeaweedFS."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from handoff_files import HandoffStore
from handoff_files.cli.main import main
from handoff_files.signing.keys import SigningKey
from handoff_files.storage import BucketStorage
from handoff_files.thread.bucketstore import BucketThreadStore


def _saves(url: str, count: int, **options: object) -> None:
    for step in range(1, count + 1):
        HandoffStore(url, thread_id="doc", **options).save({"narrative": f"step {step}"})  # type: ignore[arg-type]


def _doctor(capsys: pytest.CaptureFixture[str], url: str, *options: str) -> tuple[int, list[dict[str, str]]]:
    code = main(["doctor", url, "--json", *options])
    findings: list[dict[str, str]] = json.loads(capsys.readouterr().out)
    return code, findings


def _leave_behind(url: str, key: str, generation: int) -> None:
    """Put *key* back to what it held at *generation*: a writer killed between its commit and its copies."""
    storage = BucketStorage(url)
    store = HandoffStore(url)
    assert isinstance(store, BucketThreadStore)
    old = store.generation(generation).handoff.model_dump_json().encode()
    storage.replace(key, old, storage.read(key, limit=1 << 20).etag)


def test_a_healthy_bucket_thread_checks_clean(bucket_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _saves(bucket_url, 2)
    code, findings = _doctor(capsys, bucket_url)
    assert code == 0
    assert {f["level"] for f in findings} == {"ok"}
    assert any("newest 2" in f["what"] for f in findings)


def test_a_pruned_threads_retention_record_is_the_librarys(bucket_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _saves(bucket_url, 4, keep=2)
    assert BucketStorage(bucket_url).list("retention") == ["retention.json"]
    code, findings = _doctor(capsys, bucket_url)
    assert code == 0
    assert [f for f in findings if "not the library's" in f["what"]] == []


def test_copies_left_behind_are_said_and_moved_on_by_repair(
    bucket_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _saves(bucket_url, 2)
    _leave_behind(bucket_url, "handoff.json", 1)
    BucketStorage(bucket_url).remove("state.json")
    code, findings = _doctor(capsys, bucket_url)
    assert code == 0  # warnings: every generation is safe in history/
    assert [f["what"] for f in findings if f["level"] == "warning"] == [
        f"{bucket_url}/handoff.json holds 1, not generation 2",
        f"{bucket_url}/state.json holds nothing, not generation 2",
    ]
    code, findings = _doctor(capsys, bucket_url, "--repair")
    assert code == 0
    assert len([f for f in findings if f["level"] == "repaired"]) == 2
    code, findings = _doctor(capsys, bucket_url)
    assert {f["level"] for f in findings} == {"ok"}
    mirror = json.loads(BucketStorage(bucket_url).read("state.json", limit=1 << 20).data)
    assert mirror["generation"] == 2


def test_a_damaged_generation_is_an_error_and_strangers_objects_are_left_alone(
    bucket_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _saves(bucket_url, 2)
    storage = BucketStorage(bucket_url)
    first = storage.read("history/00000001.json", limit=1 << 20)
    storage.replace("history/00000001.json", first.data.replace(b"step 1", b"STEP 1"), first.etag)
    storage.create("notes/readme.txt", b"a person's")
    storage.create("journal/0000000001-zzzz.json", b'{"event": "x", "evil": [1]}')
    code, findings = _doctor(capsys, bucket_url, "--repair")
    assert code == 1
    errors = [f["what"] for f in findings if f["level"] == "error"]
    assert errors[0].startswith(f"{bucket_url}/history/00000001.json: content does not match its seal")
    assert any(f["what"] == "not the library's, left alone: notes/readme.txt" for f in findings)
    assert any("journal/0000000001-zzzz.json" in f["what"] and f["level"] == "warning" for f in findings)
    assert storage.read("notes/readme.txt", limit=100).data == b"a person's"
    assert b"STEP 1" in storage.read("history/00000001.json", limit=1 << 20).data  # evidence, kept


def test_state_json_of_a_signed_generation_is_rewritten_only_by_its_signer(
    bucket_url: str,
    capsys: pytest.CaptureFixture[str],
    alice: SigningKey,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _saves(bucket_url, 2, signing_key=alice)
    _leave_behind(bucket_url, "handoff.json", 1)
    BucketStorage(bucket_url).remove("state.json")
    code, findings = _doctor(capsys, bucket_url, "--repair")  # no key configured: alice's state.json is not ours
    assert code == 1
    assert [f["level"] for f in findings if f["kind"] in ("primary", "mirror")] == ["repaired", "unrepaired"]
    assert "is its signer's" in next(f["what"] for f in findings if f["kind"] == "mirror")
    monkeypatch.setenv("HANDOFF_FILES_SIGNING_KEY", str(tmp_path / "alice"))  # alice's own doctor
    code, findings = _doctor(capsys, bucket_url, "--repair")
    assert code == 0
    assert [f["level"] for f in findings if f["kind"] == "primary"] == ["repaired"]
    mirror = json.loads(BucketStorage(bucket_url).read("state.json", limit=1 << 20).data)
    assert mirror["generation"] == 2
    assert mirror["signature"].startswith("-----BEGIN SSH SIGNATURE-----")
