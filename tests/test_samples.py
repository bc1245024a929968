"""The golden samples: every version loads (migrating), validates and round-trips; every broken one is refused."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Final

import jsonschema
import pytest
from ruamel.yaml import YAML

import handoff_files
from handoff_files import Handoff, HandoffError, HandoffStore, UnsealedEditError, load
from handoff_files.format.codec import YAML_HEADER
from tests.conftest import ROOT

SAMPLES: Final = ROOT / "samples"
SCHEMAS: Final = ROOT / "schemas"
BROKEN: Final = SAMPLES / "broken"
GENERATOR: Final = SAMPLES / "make_samples.py"
LEGACY: Final = {"0.8": SAMPLES / "v0.8" / "coding-task.json", "1.0": SAMPLES / "v1.0" / "coding-task.json"}
V20_JSON: Final = SAMPLES / "v2.0" / "coding-task.json"
V20_YAML: Final = SAMPLES / "v2.0" / "coding-task.yaml"
EXPECTED: Final[dict[str, dict[str, str]]] = json.loads((BROKEN / "expected.json").read_text(encoding="utf-8"))
_CREATED_AT = re.compile(rb'"created_at": "([^"]+)"')

GOOD = [
    pytest.param("0.8", LEGACY["0.8"], id="v0.8-json"),
    pytest.param("1.0", LEGACY["1.0"], id="v1.0-json"),
    pytest.param("2.0", V20_JSON, id="v2.0-json"),
    pytest.param("2.0", V20_YAML, id="v2.0-yaml"),
]
LEGACY_PARAMS = [pytest.param(version, path, id=f"v{version}") for version, path in LEGACY.items()]
V20_PARAMS = [pytest.param(V20_JSON, id="json"), pytest.param(V20_YAML, id="yaml")]
BROKEN_PARAMS = [pytest.param(name, expected, id=name) for name, expected in EXPECTED.items()]


def _parse(path: Path) -> Any:
    if path.suffix == ".yaml":
        return YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    return json.loads(path.read_bytes())


def _run_generator(out: Path, python: str, env: dict[str, str], *args: str) -> None:
    subprocess.run([python, str(GENERATOR), str(out), *args], cwd=ROOT, env=env, check=True, capture_output=True)


def _as_left_by_its_writer(source: Path, directory: Path) -> Path:
    """Copy *source* with its mtime set to its created_at, as a file nobody rewrote since sealing has.

    A checkout gives every file the checkout time; the loader tells corruption from a person's
    edit by comparing the mtime with created_at, so the copy must carry the writer's mtime.
    """
    copy = directory / source.name
    shutil.copyfile(source, copy)
    match = _CREATED_AT.search(copy.read_bytes())
    if match is not None:
        moment = dt.datetime.fromisoformat(match.group(1).decode()).timestamp()
        os.utime(copy, (moment, moment))
    return copy


# -- the generator --------------------------------------------------------------------------


def test_the_generator_reproduces_every_committed_sample_byte_for_byte(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    """Legacy and broken files come from fixed data; 2.0 samples are kept and their broken cases derived from them."""
    out = tmp_path / "samples"
    shutil.copytree(SAMPLES / "v2.0", out / "v2.0")
    _run_generator(out, python, subprocess_env)
    written = sorted(path.relative_to(out) for path in out.rglob("*") if path.is_file())
    committed = sorted(
        path.relative_to(SAMPLES)
        for directory in ("v0.8", "v1.0", "v2.0", "broken")
        for path in (SAMPLES / directory).rglob("*")
        if path.is_file()
    )
    assert written == committed
    changed = [str(name) for name in written if (out / name).read_bytes() != (SAMPLES / name).read_bytes()]
    assert changed == [], (
        "samples/ drifted from the generator: run `python samples/make_samples.py` and review the diff"
    )


def test_freshly_sealed_2_0_samples_load_and_hold_the_committed_layers(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    _run_generator(tmp_path, python, subprocess_env, "--refresh-v2")
    for committed in (V20_JSON, V20_YAML):
        fresh = load(tmp_path / "v2.0" / committed.name)
        assert fresh.content() == load(committed).content()


# -- intact samples -------------------------------------------------------------------------


@pytest.mark.parametrize(("version", "path"), GOOD)
def test_every_sample_validates_against_its_versions_schema(version: str, path: Path) -> None:
    schema = json.loads((SCHEMAS / f"handoff-{version}.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(_parse(path))


@pytest.mark.parametrize(("version", "path"), LEGACY_PARAMS)
def test_legacy_sample_is_written_as_its_old_writer_wrote_it(version: str, path: Path) -> None:
    """``json.dumps(handoff, indent=2)``, checksum = 16 hex of sha256 over ``json.dumps(state, sort_keys=True)``."""
    data = path.read_bytes()
    document = json.loads(data)
    assert document["schema_version"] == version
    assert data == json.dumps(document, indent=2).encode("utf-8")
    state_json = json.dumps(document["state"], sort_keys=True).encode("utf-8")
    assert document["checksum"] == hashlib.sha256(state_json).hexdigest()[:16]
    assert b"\\u00eb" in data, "the story's non-ASCII text (Zoë) is in the file, escaped as the old writers did"


@pytest.mark.parametrize(("version", "path"), LEGACY_PARAMS)
def test_legacy_sample_loads_by_migrating_to_2_0_and_keeps_its_story(version: str, path: Path) -> None:
    old = json.loads(path.read_bytes())
    handoff = load(path)
    assert handoff.schema_version == "2.0"
    migrated = handoff.lineage.migrated_from
    assert migrated is not None
    assert migrated.schema_version == version
    assert migrated.checksum is not None
    assert old["checksum"] in migrated.checksum
    assert handoff.narrative == (old["summary"] if version == "0.8" else old["narrative"])
    for tasks in ("active_tasks", "completed_tasks", "blocked_tasks"):
        assert getattr(handoff.state, tasks) == old["state"][tasks]
    assert handoff.state.environment == old["state"]["environment"]
    assert handoff.state.error_count == old["state"]["error_count"]
    assert [warning.text for warning in handoff.warnings] == old["warnings"]
    if version == "0.8":
        assert [decision.decision for decision in handoff.decisions] == old["decisions"]
        assert [priority.task for priority in handoff.priorities] == old["todo"]
    else:
        # every key the old decision had lands with its value (the rest are 2.0's defaults)
        assert len(handoff.decisions) == len(old["decisions"])
        for new, was in zip(handoff.decisions, old["decisions"], strict=True):
            assert {key: getattr(new, key) for key in was} == was
        assert [priority.model_dump() for priority in handoff.priorities] == old["priorities"]


WRITEUP: Final = SAMPLES / "v1.0" / "writeup-example.json"


def test_the_writeups_own_1_0_example_loads_with_statuses_in_any_case() -> None:
    """Upper-case statuses and urgencies are read as 2.0's names; a status 2.0 has no name for is kept in data."""
    old = json.loads(WRITEUP.read_bytes())
    handoff = load(WRITEUP)
    assert [decision.status for decision in handoff.decisions] == ["decided", "deferred", "decided"]
    assert [decision.decision for decision in handoff.decisions] == [d["decision"] for d in old["decisions"]]
    assert [priority.urgency for priority in handoff.priorities] == ["first", "after_primary"]
    assert handoff.state.data["decision_3_status"] == "PENDING"
    migrated = handoff.lineage.migrated_from
    assert migrated is not None
    assert any('decision 3 had status "PENDING"' in note for note in migrated.notes)


@pytest.mark.parametrize("path", V20_PARAMS)
def test_2_0_sample_loads_with_its_seal_verified(path: Path) -> None:
    handoff = load(path)  # load() verifies the seal or raises
    assert handoff.seal is not None
    assert (handoff.agent_id, handoff.thread_id) == ("importer-agent", "importer-port")
    assert handoff.lineage.migrated_from is None
    assert any(decision.status == "deferred" for decision in handoff.decisions)
    assert handoff.state.active_tasks
    assert handoff.state.blocked_tasks
    assert handoff.state.completed_tasks
    assert handoff.context is not None


def test_yaml_sample_carries_human_comments_that_the_seal_ignores() -> None:
    text = V20_YAML.read_text(encoding="utf-8")
    header = YAML_HEADER.count("\n")
    own_line = [line for line in text.splitlines() if line.startswith("#")]
    trailing = [line for line in text.splitlines() if not line.startswith("#") and "  # " in line]
    assert len(own_line) > header
    assert trailing
    assert load(V20_YAML).content() == load(V20_JSON).content()


@pytest.mark.parametrize(("version", "path"), GOOD)
def test_every_sample_round_trips_through_a_save(version: str, path: Path, tmp_path: Path) -> None:
    original = load(path)
    receipt = HandoffStore(tmp_path / "round-trip").save(original)
    again = load(receipt.path)
    assert isinstance(again, Handoff)
    assert again.content() == original.content()


# -- broken samples -------------------------------------------------------------------------


def test_every_broken_file_has_an_expected_error() -> None:
    on_disk = {path.name for path in BROKEN.iterdir() if path.name != "expected.json"}
    assert on_disk == set(EXPECTED)
    for expected in EXPECTED.values():
        assert issubclass(getattr(handoff_files, expected["error"]), HandoffError)


@pytest.mark.parametrize(("name", "expected"), BROKEN_PARAMS)
def test_broken_sample_is_refused_with_its_expected_error(name: str, expected: dict[str, str], tmp_path: Path) -> None:
    path = _as_left_by_its_writer(BROKEN / name, tmp_path)
    with pytest.raises(HandoffError) as caught:
        load(path)
    assert type(caught.value).__name__ == expected["error"], caught.value
    assert expected["contains"] in caught.value.reason


@pytest.mark.parametrize(
    ("name", "source"),
    [
        pytest.param("v0.8-flipped-byte.json", LEGACY["0.8"], id="v0.8"),
        pytest.param("v1.0-flipped-byte.json", LEGACY["1.0"], id="v1.0"),
        pytest.param("v2.0-flipped-byte.json", V20_JSON, id="v2.0"),
    ],
)
def test_flipped_byte_sample_differs_from_its_source_in_exactly_one_bit(name: str, source: Path) -> None:
    broken, intact = (BROKEN / name).read_bytes(), source.read_bytes()
    assert len(broken) == len(intact)
    assert sum(bin(a ^ b).count("1") for a, b in zip(broken, intact, strict=True)) == 1


@pytest.mark.parametrize(
    ("name", "source"),
    [
        pytest.param("v0.8-truncated.json", LEGACY["0.8"], id="v0.8"),
        pytest.param("v1.0-truncated.json", LEGACY["1.0"], id="v1.0"),
        pytest.param("v2.0-truncated.json", V20_JSON, id="v2.0"),
    ],
)
def test_truncated_sample_is_a_prefix_of_its_source(name: str, source: Path) -> None:
    broken = (BROKEN / name).read_bytes()
    assert 0 < len(broken) < source.stat().st_size
    assert source.read_bytes().startswith(broken)


def test_2_0_seal_mismatch_in_a_file_rewritten_after_sealing_is_an_unsealed_edit(tmp_path: Path) -> None:
    """The other side of the mtime rule the broken 2.0 cases rely on: a later mtime means a person's edit."""
    path = tmp_path / "v2.0-wrong-seal.json"
    shutil.copyfile(BROKEN / path.name, path)  # mtime: now, long after the sample's created_at
    with pytest.raises(UnsealedEditError):
        load(path)
