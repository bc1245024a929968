"""Versions: 0.8 and 1.0 migrate to 2.1 (through 2.0) faithfully, checksums are checked, unknown versions refused."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handoff_files import (
    ChecksumMismatchError,
    Handoff,
    HandoffStore,
    UnsupportedVersionError,
    load,
)
from handoff_files.cli.main import main
from handoff_files.format.model import PARSED
from handoff_files.format.versions import legacy_checksum, migrate_document, steps

_text = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=30)
_naive = st.datetimes().map(lambda d: d.replace(microsecond=d.microsecond).isoformat())
_urgency = st.sampled_from(["first", "primary", "after_primary", "if_time_permits", "high", "soon"])

legacy_states = st.fixed_dictionaries(
    {},
    optional={
        "session_id": st.integers(min_value=0, max_value=10_000),
        "timestamp": _naive,
        "active_tasks": st.lists(_text, max_size=3),
        "completed_tasks": st.lists(_text, max_size=3),
        "blocked_tasks": st.lists(_text, max_size=3),
        "environment": st.dictionaries(_text, _text | st.integers() | st.booleans(), max_size=3),
        "error_count": st.integers(min_value=0, max_value=1000),
        "energy_level": st.floats(min_value=0, max_value=1),
        "mood": _text,
        "last_file": _text,
        "legacy_mood": _text,  # collides with the name a moved `mood` would first take
        "data": st.dictionaries(_text, st.integers() | _text, max_size=2),
    },
)
v1_documents = st.fixed_dictionaries(
    {
        "schema_version": st.just("1.0"),
        "session_id": st.integers(min_value=0, max_value=10_000),
        "created_at": _naive,
        "state": legacy_states,
        "narrative": st.text(max_size=60),
        "decisions": st.lists(
            st.fixed_dictionaries(
                {"decision": _text, "reason": _text},
                optional={
                    "alternatives_considered": st.lists(_text, max_size=2),
                    "reversible": st.booleans(),
                    "status": st.sampled_from(["decided", "deferred", "reversed"]),
                    "owner": _text,
                },
            ),
            max_size=3,
        ),
        "priorities": st.lists(
            st.fixed_dictionaries({"task": _text, "urgency": _urgency}, optional={"due": _text}), max_size=3
        ),
        "warnings": st.lists(_text, max_size=3),
    },
    optional={"_notes": st.lists(_text, max_size=2), "legacy": _text, "agent": _text},
)
v08_documents = st.fixed_dictionaries(
    {
        "schema_version": st.just("0.8"),
        "session": st.integers(min_value=0, max_value=10_000),
        "timestamp": _naive,
        "state": legacy_states,
        "summary": st.text(max_size=60),
        "decisions": st.lists(_text, max_size=3),
        "todo": st.lists(_text, max_size=4),
        "warnings": st.lists(_text, max_size=3),
    }
)


def sealed_legacy(document: dict[str, Any]) -> dict[str, Any]:
    return {**document, "checksum": legacy_checksum(document["state"])}


def write_legacy(path: Path, document: dict[str, Any]) -> Path:
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")  # as those writers wrote them
    return path


def everything_landed(old: dict[str, Any], new: Handoff) -> None:
    """Every field of the old document is in the new one, or named in the migration notes."""
    assert new.lineage.migrated_from is not None
    notes = " ".join(new.lineage.migrated_from.notes)
    known = {"active_tasks", "completed_tasks", "blocked_tasks", "error_count", "session_id"}
    for key, value in old["state"].items():
        if key in known:
            assert getattr(new.state, key) == value, key
        elif key == "energy_level":
            assert new.state.energy_level == value
        elif key == "data":
            for inner, item in value.items():
                assert new.state.data[inner] == item
        elif key not in {"timestamp", "environment"}:
            assert value in new.state.data.values(), key  # moved under a free name
            assert repr(key) in notes
    for key, value in old["state"].get("environment", {}).items():
        assert new.state.environment[key] == (value if isinstance(value, str) else json.dumps(value))
    if "timestamp" in old["state"]:
        assert new.state.timestamp is not None
        assert new.state.timestamp.replace(tzinfo=None).isoformat() == old["state"]["timestamp"]
        assert "state.timestamp" in notes
    assert [w.text for w in new.warnings] == old["warnings"]
    assert new.created_at.utcoffset() is not None
    assert "covered only state" in notes
    assert new.lineage.migrated_from.checksum == f"sha256-16:{old['checksum']}"
    for key in ("_notes", "legacy", "agent"):
        if key in old:
            assert new.state.data["legacy"][key] == old[key], key
            assert f"top-level key {key!r}" in notes


@given(v1_documents)
def test_any_1_0_document_migrates_to_a_valid_current_one_keeping_every_field(document: dict[str, Any]) -> None:
    old = sealed_legacy(document)
    frozen = copy.deepcopy(old)
    first = migrate_document(old, "<test>")
    assert old == frozen, "a migration step mutated its input"
    assert migrate_document(old, "<test>") == first, "migration is not deterministic"
    new = Handoff.model_validate(first, context={PARSED: True})
    everything_landed(old, new)
    assert new.narrative == old["narrative"]
    assert new.created_at.replace(tzinfo=None).isoformat() == old["created_at"]
    assert new.generation == max(old["session_id"], 1)
    defaults = {"alternatives_considered": [], "reversible": True, "status": "decided"}
    for decision, was in zip(new.decisions, old["decisions"], strict=True):
        expected = {**defaults, **{k: v for k, v in was.items() if k != "owner"}}
        assert decision.model_dump() == expected
    assert [p.task for p in new.priorities] == [p["task"] for p in old["priorities"]]
    notes = " ".join(new.lineage.migrated_from.notes)  # type: ignore[union-attr]
    for i, priority in enumerate(old["priorities"], 1):
        if priority["urgency"] not in ("first", "primary", "after_primary", "if_time_permits"):
            assert f"priority {i} had urgency" in notes
        if "due" in priority:
            assert new.state.data[f"priority_{i}_fields"] == {"due": priority["due"]}
    for i, decision in enumerate(old["decisions"], 1):
        if "owner" in decision:
            assert new.state.data[f"decision_{i}_fields"] == {"owner": decision["owner"]}
            assert f"decision {i}'s extra fields" in notes


@given(v08_documents)
def test_any_0_8_document_migrates_to_a_valid_current_one_keeping_every_field(document: dict[str, Any]) -> None:
    old = sealed_legacy(document)
    frozen = copy.deepcopy(old)
    migrated = migrate_document(old, "<test>")
    assert old == frozen
    assert migrate_document(old, "<test>") == migrated
    new = Handoff.model_validate(migrated, context={PARSED: True})
    everything_landed(old, new)
    assert new.narrative == old["summary"]
    assert [d.decision for d in new.decisions] == old["decisions"]
    assert all(d.status == "decided" for d in new.decisions)
    assert [p.task for p in new.priorities] == old["todo"]
    notes = " ".join(new.lineage.migrated_from.notes)  # type: ignore[union-attr]
    if old["decisions"]:
        assert "was plain text" in notes
    if old["todo"]:
        assert "todo list" in notes


def test_migrating_a_current_document_changes_nothing(thread_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    receipt = HandoffStore(thread_dir).save({"narrative": "current"})
    document = json.loads(receipt.path.read_text(encoding="utf-8"))
    assert migrate_document(document, receipt.path) == document
    before = {p: p.read_bytes() for p in thread_dir.rglob("*") if p.is_file()}
    assert main(["migrate", str(thread_dir)]) == 0
    assert "already 2.1: nothing to do" in capsys.readouterr().out
    assert {p: p.read_bytes() for p in thread_dir.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        pytest.param({"decisions": "use sqlite"}, "decisions must be a list", id="0.8-decisions-string"),
        pytest.param({"todo": "fix it"}, "todo must be a list of strings", id="0.8-todo-string"),
        pytest.param({"warnings": "careful"}, "warnings must be a list of strings", id="0.8-warnings-string"),
        pytest.param({"state": [["a", 1]]}, "state must be an object", id="0.8-state-pairs"),
        pytest.param({"timestamp": 1705312200}, "must be a string", id="0.8-timestamp-number"),
    ],
)
def test_a_0_8_field_of_the_wrong_type_is_refused_not_guessed(
    tmp_path: Path, change: dict[str, Any], needle: str
) -> None:
    from handoff_files import HandoffMigrationError

    document = {
        "schema_version": "0.8",
        "session": 2,
        "timestamp": "2026-11-06T10:00:00",
        "state": {"active_tasks": ["a"]},
        "summary": "s",
        "decisions": [],
        "todo": [],
        "warnings": [],
        **change,
    }
    with pytest.raises(HandoffMigrationError, match=needle):
        load(write_legacy(tmp_path / "h.json", sealed_legacy(document)))


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        pytest.param({"state": [5]}, "state must be an object", id="state-list"),
        pytest.param({"state": None}, "state must be an object", id="state-null"),
        pytest.param({"warnings": "careful"}, "warnings must be a list of strings", id="warnings-string"),
        pytest.param({"warnings": [{"text": "x"}]}, "warnings must be a list of strings", id="warnings-objects"),
        pytest.param({"created_at": 1705312200}, "created_at must be an ISO-8601", id="created-at-number"),
        pytest.param({"decisions": ["plain"]}, "decision 1 must be an object", id="decision-string"),
        pytest.param({"session_id": "4"}, "session_id must be an integer", id="session-id-string"),
    ],
)
def test_a_1_0_field_of_the_wrong_type_is_refused_not_guessed(
    tmp_path: Path, change: dict[str, Any], needle: str
) -> None:
    from handoff_files import HandoffMigrationError

    document = {**copy.deepcopy(V1), **change}
    with pytest.raises(HandoffMigrationError, match=needle):
        load(write_legacy(tmp_path / "h.json", sealed_legacy(document)))


def test_keys_that_look_like_the_migrations_own_are_kept_as_data(tmp_path: Path) -> None:
    state: dict[str, Any] = {**copy.deepcopy(V1["state"]), "data": {"legacy": {"_notes": "taken"}}}
    document = sealed_legacy({**copy.deepcopy(V1), "state": state, "_notes": "abc", "legacy_extra": {"x": 1}})
    handoff = load(write_legacy(tmp_path / "h.json", document))
    assert handoff.lineage.migrated_from is not None
    assert "a" not in handoff.lineage.migrated_from.notes
    legacy = handoff.state.data["legacy"]
    assert legacy["_notes"] == "taken"
    assert legacy["legacy__notes"] == "abc"
    assert legacy["legacy_extra"] == {"x": 1}


def test_the_steps_are_found_one_per_file_and_chain_to_the_current_version() -> None:
    chain = steps()
    assert {s: chain[s].target for s in chain} == {"0.8": "1.0", "1.0": "2.0", "2.0": "2.1"}
    assert {chain[s].name for s in chain} == {"v0_8_to_v1_0", "v1_0_to_v2_0", "v2_0_to_v2_1"}


V1: dict[str, Any] = {
    "schema_version": "1.0",
    "session_id": 4,
    "created_at": "2026-11-07T14:03:22.118204",
    "state": {"session_id": 4, "active_tasks": ["port the importer"], "error_count": 0, "energy_level": 0.5},
    "narrative": "Ported half the importer.",
    "decisions": [{"decision": "defer timezones", "reason": "needs product input", "status": "deferred"}],
    "priorities": [{"task": "finish the port", "urgency": "first"}],
    "warnings": ["dates are local time"],
}


def test_a_1_0_file_with_tampered_state_fails_its_checksum(tmp_path: Path) -> None:
    document = sealed_legacy(copy.deepcopy(V1))
    document["state"]["error_count"] = 7
    with pytest.raises(ChecksumMismatchError, match=r"does not match its 1\.0 checksum"):
        load(write_legacy(tmp_path / "h.json", document))


def test_a_1_0_file_with_an_edited_narrative_loads_and_says_its_seal_covered_only_state(tmp_path: Path) -> None:
    document = sealed_legacy(copy.deepcopy(V1))
    document["narrative"] = "Somebody rewrote this later."
    handoff = load(write_legacy(tmp_path / "h.json", document))
    assert handoff.narrative == "Somebody rewrote this later."
    assert handoff.lineage.migrated_from is not None
    assert any("covered only state" in note for note in handoff.lineage.migrated_from.notes)


@pytest.mark.parametrize(
    ("change", "needles"),
    [
        pytest.param({"schema_version": None}, ["no schema_version", "--assume-version"], id="no-version"),
        pytest.param({"schema_version": "1.5"}, ["'1.5'", "0.8, 1.0, 2.0"], id="unknown-version"),
        pytest.param({"schema_version": "2.2"}, ["'2.2' is newer than '2.1'", "upgrade"], id="newer-version"),
        pytest.param({"schema_version": 1.0}, ["must be a string", "1.0 (float)"], id="number-version"),
    ],
)
def test_the_version_policy_refuses_each_case_with_its_own_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], needles: list[str]
) -> None:
    document = sealed_legacy(copy.deepcopy(V1))
    document.update(change)
    if document["schema_version"] is None:
        del document["schema_version"]
    path = write_legacy(tmp_path / "h.json", document)
    with pytest.raises(UnsupportedVersionError) as info:
        load(path)
    for needle in needles:
        assert needle in info.value.reason
    assert main(["validate", str(path)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    for needle in needles:
        assert needle in err


def test_assume_version_lets_a_person_say_what_an_unversioned_file_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = sealed_legacy(copy.deepcopy(V1))
    del document["schema_version"]
    path = write_legacy(tmp_path / "h.json", document)
    handoff = load(path, assume_version="1.0")
    assert handoff.narrative == V1["narrative"]
    assert handoff.lineage.migrated_from is not None
    assert "because a person said so" in handoff.lineage.migrated_from.notes[0]
    assert main(["validate", "--assume-version", "1.0", str(path)]) == 0
    assert "1.0 checksum over state" in capsys.readouterr().out
    assert main(["show", "--assume-version", "1.0", str(path)]) == 0
    assert "Ported half the importer." in capsys.readouterr().out


def test_migrate_dry_run_writes_nothing_and_migrate_seals_the_next_generation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = tmp_path / "importer"
    thread.mkdir()
    original = write_legacy(thread / "handoff.json", sealed_legacy(copy.deepcopy(V1)))
    before = original.read_bytes()
    assert main(["migrate", str(thread), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "dry run, nothing written" in out
    assert "created_at '2026-11-07T14:03:22.118204' had no timezone; read as UTC" in out
    assert original.read_bytes() == before
    assert not (thread / "history").exists()

    assert main(["migrate", str(thread)]) == 0
    assert "sealed as generation 5" in capsys.readouterr().out
    migrated = load(original)
    assert (migrated.schema_version, migrated.generation, migrated.thread_id) == ("2.1", 5, "importer")
    assert migrated.seal is not None
    assert migrated.lineage.migrated_from is not None
    assert migrated.lineage.migrated_from.schema_version == "1.0"
    kept = [p for p in (thread / "history").iterdir() if p.name.startswith("legacy-")]
    assert [p.read_bytes() for p in kept] == [before], "the original bytes must be kept in history/"

    assert main(["migrate", str(thread)]) == 0
    assert "already 2.1: nothing to do" in capsys.readouterr().out
    assert HandoffStore(thread).restore().generation == 5


def test_restore_reads_an_older_primary_and_a_save_over_it_keeps_its_bytes(tmp_path: Path) -> None:
    thread = tmp_path / "importer"
    thread.mkdir()
    original = write_legacy(thread / "handoff.json", sealed_legacy(copy.deepcopy(V1)))
    before = original.read_bytes()
    restored = HandoffStore(thread).restore()
    assert (restored.source, restored.generation) == ("primary", 4)
    assert any("migrated in memory" in p for p in restored.problems)
    receipt = HandoffStore(thread).save(restored.handoff)
    assert receipt.generation == 5
    saved = load(receipt.path)
    assert (saved.parent, saved.agent_id) == (None, "importer")
    kept = [p for p in (thread / "history").iterdir() if p.name.startswith("legacy-")]
    assert [p.read_bytes() for p in kept] == [before]


def test_seal_refuses_an_older_primary_and_points_to_migrate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = tmp_path / "importer"
    thread.mkdir()
    write_legacy(thread / "handoff.json", sealed_legacy(copy.deepcopy(V1)))
    assert main(["seal", str(thread)]) == 1
    assert "handoff migrate" in capsys.readouterr().err


def test_a_1_0_priority_without_urgency_reads_as_primary_and_sets_nothing_aside() -> None:
    old = {
        "schema_version": "1.0",
        "session_id": 2,
        "created_at": "2026-01-01T00:00:00Z",
        "state": {},
        "narrative": "n",
        "priorities": [{"task": "a"}, {"task": "b", "urgency": "Soon"}, {"task": "c", "urgency": "IF_TIME_PERMITS"}],
    }
    old["checksum"] = legacy_checksum(old["state"])
    migrated = migrate_document(old, "<test>")
    assert [p["urgency"] for p in migrated["priorities"]] == ["primary", "primary", "if_time_permits"]
    assert migrated["state"]["data"] == {"priority_2_urgency": "Soon"}
