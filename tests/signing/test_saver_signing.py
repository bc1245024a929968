"""The LangGraph saver signs its checkpoints with the key it is given, and every read checks a signature it finds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langgraph.checkpoint.base import empty_checkpoint

from handoff_files import SignatureError, SigningKeyError, load
from handoff_files.langgraph import HandoffSaver
from handoff_files.signing.keys import SigningKey
from handoff_files.thread.signatures import signer_report
from tests.conftest import ALICE

pytestmark = pytest.mark.usefixtures("signing_home")

THREAD: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


def _put(saver: HandoffSaver, narrative: str) -> str:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"narrative": narrative}
    checkpoint["channel_versions"] = {"narrative": 1}
    saver.put(THREAD, checkpoint, {}, {})
    return str(checkpoint["id"])


@pytest.mark.parametrize("durability", ["journal", "full"])
def test_a_saver_given_a_key_signs_every_checkpoint(tmp_path: Path, alice: SigningKey, durability: str) -> None:
    saver = HandoffSaver(tmp_path / "root", signing_key=tmp_path / "alice", durability=durability)  # type: ignore[arg-type]
    _put(saver, "one")
    newest = _put(saver, "two")
    for path in (tmp_path / "root" / "t" / "history").iterdir():
        report = signer_report(load(path, follow_symlinks=False), path)
        assert report is not None
        assert report.principal == ALICE
    found = HandoffSaver(tmp_path / "root", signing_key=False).get_tuple(THREAD)
    assert found is not None
    assert found.checkpoint["id"] == newest


def test_a_saver_given_no_key_writes_unsigned(tmp_path: Path) -> None:
    _put(HandoffSaver(tmp_path / "root", signing_key=False), "one")
    (path,) = (tmp_path / "root" / "t" / "history").iterdir()
    assert signer_report(load(path, follow_symlinks=False), path) is None


def test_a_bad_key_file_fails_when_the_saver_is_made(tmp_path: Path) -> None:
    (tmp_path / "not-a-key").write_text("hello\n", encoding="utf-8")
    with pytest.raises(SigningKeyError):
        HandoffSaver(tmp_path / "root", signing_key=tmp_path / "not-a-key")


def test_a_checkpoint_whose_signature_does_not_verify_is_refused_on_read(tmp_path: Path, alice: SigningKey) -> None:
    """Another checkpoint's real signature pasted over this one's, in every copy (as a folder writer could)."""
    saver = HandoffSaver(tmp_path / "root", signing_key=alice, durability="full")
    _put(saver, "one")
    thread = tmp_path / "root" / "t"
    first = json.loads((thread / "handoff.json").read_bytes())["seal"]["signature"]
    _put(saver, "two")
    for path in [thread / "handoff.json", *sorted((thread / "history").iterdir())[-1:]]:
        document = json.loads(path.read_bytes())
        document["seal"]["signature"] = first
        path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    with pytest.raises(SignatureError, match="signature does not verify over its seal"):
        HandoffSaver(tmp_path / "root", signing_key=False).get_tuple(THREAD)


def test_keep_latest_writes_a_signed_retention_record_so_verify_calls_the_older_checkpoints_pruned(
    tmp_path: Path, alice: SigningKey
) -> None:
    from handoff_files.thread.verify import verify_thread

    saver = HandoffSaver(tmp_path / "root", signing_key=alice)
    for narrative in ("one", "two", "three"):
        _put(saver, narrative)
    saver.prune(["t"], strategy="keep_latest")
    _put(saver, "four")
    checked = verify_thread(tmp_path / "root" / "t")
    assert checked.ok, checked.problems
    assert checked.retention is not None
    assert checked.retention.startswith("generations 1 to 2 pruned (retention.json:")
    assert f"signed by {ALICE}" in checked.retention
