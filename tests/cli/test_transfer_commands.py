"""`handoff export` and `handoff adopt`: thin shells over handoff_checkpoint and adopt_checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from handoff_files import HandoffStore
from handoff_files.cli.main import main
from tests.cli.test_json_schemas import check


@pytest.fixture
def alpha(tmp_path: Path) -> Path:
    """A thread with one sealed generation."""
    HandoffStore(tmp_path / "alpha").save(
        {
            "state": {"data": {"k": 1}},
            "narrative": "Half done. More later.",
            "decisions": [],
            "priorities": [{"task": "finish", "urgency": "first"}],
            "warnings": [],
        }
    )
    return tmp_path / "alpha"


def test_export_prints_a_descriptor_and_adopt_takes_it_from_a_file(
    alpha: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blobs = str(tmp_path / "blobs")
    assert main(["export", str(alpha), "--to", "beta", "--blobs", blobs, "-o", str(tmp_path / "d.json")]) == 0
    descriptor = json.loads(capsys.readouterr().out)
    assert (descriptor["source"], descriptor["to_agent"]) == ("alpha:1", "beta")
    assert main(["adopt", str(tmp_path / "d.json"), str(tmp_path / "beta-1"), "--blobs", blobs]) == 0
    out = capsys.readouterr().out
    assert "adopted alpha:1" in out
    assert "sha256 and seal verified" in out
    assert HandoffStore(tmp_path / "beta-1").restore().handoff.lineage.adopted_from is not None


def test_the_blob_store_can_come_from_the_environment(
    alpha: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HANDOFF_BLOBS", str(tmp_path / "blobs"))
    assert main(["export", str(alpha), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["blob_sha256"]


def test_no_blob_store_is_one_line_and_exit_1(
    alpha: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HANDOFF_BLOBS", raising=False)
    assert main(["export", str(alpha)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "HANDOFF_BLOBS" in err


def test_a_tampered_descriptor_is_refused_with_one_line(
    alpha: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blobs = str(tmp_path / "blobs")
    assert main(["export", str(alpha), "--blobs", blobs]) == 0
    descriptor = json.loads(capsys.readouterr().out)
    descriptor["blob_sha256"] = "0" * 64
    (tmp_path / "d.json").write_text(json.dumps(descriptor))
    assert main(["adopt", str(tmp_path / "d.json"), str(tmp_path / "beta-1"), "--blobs", blobs]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "the descriptor says" in err
    assert not (tmp_path / "beta-1").exists()


def test_adopt_says_an_unsigned_descriptor_and_the_agent_it_was_addressed_to(
    alpha: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HANDOFF_FILES_SIGNING_KEY", raising=False)
    blobs = str(tmp_path / "blobs")
    for name, to in (("d.json", ["--to", "beta"]), ("anyone.json", [])):
        assert main(["export", str(alpha), *to, "--blobs", blobs, "--no-sign", "-o", str(tmp_path / name)]) == 0
    capsys.readouterr()
    assert main(["adopt", str(tmp_path / "d.json"), str(tmp_path / "beta-1"), "--blobs", blobs]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == ["  descriptor: unsigned", "  addressed to: beta"]
    assert main(["adopt", str(tmp_path / "anyone.json"), str(tmp_path / "beta-2"), "--blobs", blobs]) == 0
    assert capsys.readouterr().out.splitlines()[2] == "  addressed to: no agent named"
    assert main(["adopt", str(tmp_path / "d.json"), str(tmp_path / "beta-3"), "--blobs", blobs, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    check(result, "adopt")
    assert (result["descriptor_signature"], result["to_agent"]) == (None, "beta")


def test_a_descriptor_file_that_is_not_json_is_refused_naming_the_file(
    alpha: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "d.json"
    path.write_text('{"descriptor_version": "1.0",', encoding="utf-8")
    assert main(["adopt", str(path), str(tmp_path / "beta-1"), "--blobs", str(tmp_path / "blobs")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"handoff: {path}: not a descriptor: ")
