"""validate(): one result per path, in order, each verified as load() does; a bad path never stops the rest."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from handoff_files import (
    HandoffNotFoundError,
    HandoffParseError,
    HandoffStore,
    UnsealedEditError,
    UnsupportedVersionError,
    load,
)
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
