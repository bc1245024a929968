"""validate(): one result per path, in order, each verified as load() does; a bad path never stops the rest."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from handoff_files import (
    HandoffError,
    HandoffNotFoundError,
    HandoffParseError,
    HandoffStore,
    UnsealedEditError,
    UnsupportedVersionError,
    load,
)
from handoff_files.cli.main import main
from handoff_files.thread.validate import Validation, validate
from tests.conftest import ROOT

CONTENT = {"narrative": "Ported half the importer.", "warnings": [{"text": "dates are local time"}]}


def test_every_path_gets_a_result_in_order_and_a_bad_one_never_stops_the_rest(tmp_path: Path) -> None:
    good = HandoffStore(tmp_path / "good").save(CONTENT).path
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": "2.0", "a": 1, "a": 2}', encoding="utf-8")
    missing = tmp_path / "missing.json"

    results = validate([bad, good, missing])

    assert [r.path for r in results] == [bad, good, missing]
    assert [r.ok for r in results] == [False, True, False]
    assert isinstance(results[0].error, HandoffParseError)
    assert "duplicate key" in results[0].error.reason
    assert isinstance(results[2].error, HandoffNotFoundError)
    assert results[1].handoff == load(good)
    assert results[1].error is None
    assert results[0].handoff is None


def test_a_thread_directory_stands_for_its_primary_verified_as_it_is(tmp_path: Path) -> None:
    thread = tmp_path / "t1"
    store = HandoffStore(thread)
    store.save(CONTENT)
    receipt = store.save(CONTENT)
    [result] = validate([thread])
    assert result.ok
    assert result.handoff is not None
    assert result.handoff.generation == receipt.generation
    # an edit of the primary fails validation, though a restore would fall back to history/
    text = receipt.path.read_text(encoding="utf-8").replace("Ported half", "Ported ALL")
    receipt.path.write_text(text, encoding="utf-8")
    later = receipt.created_at.timestamp() + 60
    os.utime(receipt.path, (later, later))
    [edited] = validate([str(thread)])
    assert not edited.ok
    assert isinstance(edited.error, UnsealedEditError)
    assert edited.path == str(thread)  # the path as given, not the primary it stands for


def test_assume_version_is_passed_to_each_load(tmp_path: Path) -> None:
    document = json.loads((ROOT / "samples" / "v1.0" / "coding-task.json").read_text(encoding="utf-8"))
    del document["schema_version"]
    unversioned = tmp_path / "h.json"
    unversioned.write_text(json.dumps(document), encoding="utf-8")
    [refused] = validate([unversioned])
    assert isinstance(refused.error, UnsupportedVersionError)
    [assumed] = validate([unversioned], assume_version="1.0")
    assert assumed.ok
    assert assumed.handoff is not None
    assert assumed.handoff.lineage.migrated_from is not None


def test_no_paths_give_no_results_and_a_result_is_frozen(tmp_path: Path) -> None:
    assert validate([]) == []
    [result] = validate([tmp_path / "nowhere.json"])
    assert isinstance(result, Validation)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.path = "elsewhere"  # type: ignore[misc]


def test_validate_reads_only_even_a_dead_writers_temp_file_is_left(tmp_path: Path) -> None:
    thread = tmp_path / "t1"
    HandoffStore(thread).save({"narrative": "one"})
    stray = thread / ".handoff.json.abcd1234.tmp"
    stray.write_bytes(b"{")
    before = sorted(p.name for p in thread.iterdir())
    assert [result.ok for result in validate([thread])] == [True]
    assert sorted(p.name for p in thread.iterdir()) == before


def test_a_thread_whose_primary_is_a_symlink_is_refused_without_following_it(tmp_path: Path) -> None:
    # the link's target is a good handoff, so following it would verify: only a refusal fails
    target = HandoffStore(tmp_path / "elsewhere").save(CONTENT).path
    thread = tmp_path / "t1"
    thread.mkdir()
    (thread / "handoff.json").symlink_to(target)
    good = HandoffStore(tmp_path / "good").save(CONTENT).path.parent

    refused, verified = validate([thread, good])

    assert not refused.ok
    assert refused.handoff is None
    assert isinstance(refused.error, HandoffError)
    assert refused.error.path == str(thread.absolute() / "handoff.json")
    assert "symbolic link" in refused.error.reason
    assert verified.ok


def test_a_file_named_by_the_user_is_read_through_a_symlink_as_show_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = HandoffStore(tmp_path / "t1").save(CONTENT).path
    link = tmp_path / "link.json"
    link.symlink_to(target)
    [result] = validate([link])
    assert result.ok
    assert result.handoff == load(target)
    assert main(["show", str(link)]) == 0  # the command validate matches
    assert "Ported half the importer." in capsys.readouterr().out


def _name_too_long(tmp_path: Path) -> Path:
    # ENAMETOOLONG: a stat error that Path.is_dir() lets escape, and root cannot read past
    return tmp_path / ("x" * 300) / "handoff.json"


def _fifo(tmp_path: Path) -> Path:
    os.mkfifo(tmp_path / "fifo.json")
    return tmp_path / "fifo.json"


def _symlink_loop(tmp_path: Path) -> Path:
    (tmp_path / "loop.json").symlink_to(tmp_path / "loop.json")
    return tmp_path / "loop.json"


def _primary_is_a_directory(tmp_path: Path) -> Path:
    (tmp_path / "t9" / "handoff.json").mkdir(parents=True)
    return tmp_path / "t9"


def _unsearchable_directory(tmp_path: Path) -> Path:
    locked = tmp_path / "locked"
    locked.mkdir()
    HandoffStore(tmp_path / "t8").save(CONTENT).path.rename(locked / "handoff.json")
    locked.chmod(0o000)
    return locked / "handoff.json"


UNREADABLE = [
    pytest.param(_name_too_long, id="name-too-long"),
    pytest.param(_fifo, id="fifo"),
    pytest.param(_symlink_loop, id="symlink-loop"),
    pytest.param(_primary_is_a_directory, id="thread-primary-is-a-directory"),
    pytest.param(
        _unsearchable_directory,
        id="file-in-a-chmod-000-directory",
        marks=pytest.mark.skipif(
            os.geteuid() == 0, reason="root searches any directory; name-too-long makes the same stat error real"
        ),
    ),
]


@pytest.mark.parametrize("make", UNREADABLE)
def test_an_unreadable_path_is_one_failed_result_and_the_rest_are_still_checked(
    tmp_path: Path, make: Callable[[Path], Path]
) -> None:
    good = HandoffStore(tmp_path / "good").save(CONTENT).path
    bad = make(tmp_path)
    results = validate([bad, good])
    assert [r.path for r in results] == [bad, good]
    assert [r.ok for r in results] == [False, True]
    assert isinstance(results[0].error, HandoffError)
