"""The golden samples: every version loads (migrating), validates and round-trips; every broken one is refused."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

import jsonschema
import pytest
from ruamel.yaml import YAML

import handoff_files
from handoff_files import ChecksumMismatchError, Handoff, HandoffError, HandoffStore, load
from handoff_files.format.codec import YAML_HEADER
from handoff_files.thread.signatures import signature_damage, signer_report
from tests.conftest import ROOT

SAMPLES: Final = ROOT / "samples"
SCHEMAS: Final = ROOT / "schemas"
BROKEN: Final = SAMPLES / "broken"
GENERATOR: Final = SAMPLES / "make_samples.py"
LEGACY: Final = {"0.8": SAMPLES / "v0.8" / "coding-task.json", "1.0": SAMPLES / "v1.0" / "coding-task.json"}
V20_JSON: Final = SAMPLES / "v2.0" / "coding-task.json"
V20_YAML: Final = SAMPLES / "v2.0" / "coding-task.yaml"
V21_JSON: Final = SAMPLES / "v2.1" / "coding-task.json"
V21_YAML: Final = SAMPLES / "v2.1" / "coding-task.yaml"
SAMPLE_SIGNERS: Final = SAMPLES / "keys" / "allowed_signers"
EXPECTED: Final[dict[str, dict[str, str]]] = json.loads((BROKEN / "expected.json").read_text(encoding="utf-8"))

GOOD = [
    pytest.param("0.8", LEGACY["0.8"], id="v0.8-json"),
    pytest.param("1.0", LEGACY["1.0"], id="v1.0-json"),
    pytest.param("2.0", V20_JSON, id="v2.0-json"),
    pytest.param("2.0", V20_YAML, id="v2.0-yaml"),
    pytest.param("2.1", V21_JSON, id="v2.1-json"),
    pytest.param("2.1", V21_YAML, id="v2.1-yaml"),
]
LEGACY_PARAMS = [pytest.param(version, path, id=f"v{version}") for version, path in LEGACY.items()]
SEALED_PARAMS = [
    pytest.param(path, id=f"{path.parent.name}-{path.suffix[1:]}") for path in (V20_JSON, V20_YAML, V21_JSON, V21_YAML)
]
BROKEN_PARAMS = [pytest.param(name, expected, id=name) for name, expected in EXPECTED.items()]


def _parse(path: Path) -> Any:
    if path.suffix == ".yaml":
        return YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    return json.loads(path.read_bytes())


def _run_generator(out: Path, python: str, env: dict[str, str], *args: str) -> None:
    subprocess.run([python, str(GENERATOR), str(out), *args], cwd=ROOT, env=env, check=True, capture_output=True)


def _as_a_fresh_checkout_leaves_it(source: Path, directory: Path) -> Path:
    """Copy *source* as a clone or a checkout leaves it: the bytes, and the file times of now.

    No file time is set back: what the loader calls damage or an edit must not depend on them.
    """
    copy = directory / source.name
    shutil.copyfile(source, copy)
    return copy


# -- the generator --------------------------------------------------------------------------


def test_the_generator_reproduces_every_committed_sample_byte_for_byte(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    """Legacy and broken files come from fixed data; sealed samples are kept, broken cases derived from them."""
    out = tmp_path / "samples"
    for kept in ("v2.0", "v2.1", "keys"):
        shutil.copytree(SAMPLES / kept, out / kept)
    _run_generator(out, python, subprocess_env)
    written = sorted(path.relative_to(out) for path in out.rglob("*") if path.is_file())
    committed = sorted(
        path.relative_to(SAMPLES)
        for directory in ("v0.8", "v1.0", "v2.0", "v2.1", "keys", "broken")
        for path in (SAMPLES / directory).rglob("*")
        if path.is_file()
    )
    assert written == committed
    changed = [str(name) for name in written if (out / name).read_bytes() != (SAMPLES / name).read_bytes()]
    assert changed == [], (
        "samples/ drifted from the generator: run `python samples/make_samples.py` and review the diff"
    )


def test_freshly_signed_2_1_samples_load_and_hold_the_committed_layers(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    """``--refresh`` seals and signs new 2.1 files with the kept key; the 2.0 files are copied, never resealed."""
    _run_generator(tmp_path, python, subprocess_env, "--refresh")
    for committed in (V21_JSON, V21_YAML):
        fresh = load(tmp_path / "v2.1" / committed.name)
        assert fresh.content() == load(committed).content()
        assert fresh.schema_version == "2.1"
        assert fresh.seal is not None
        assert fresh.seal.signature is not None
        report = signer_report(fresh, committed, allowed_signers=SAMPLE_SIGNERS)
        assert report is not None
        assert report.principal == "importer-agent@samples.invalid"
    assert [(tmp_path / "v2.0" / p.name).read_bytes() for p in (V20_JSON, V20_YAML)] == [
        p.read_bytes() for p in (V20_JSON, V20_YAML)
    ]
    assert (tmp_path / "keys" / "sample-signer").stat().st_mode & 0o777 == 0o600


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
def test_legacy_sample_loads_by_migrating_to_the_current_version_and_keeps_its_story(version: str, path: Path) -> None:
    old = json.loads(path.read_bytes())
    handoff = load(path)
    assert handoff.schema_version == "2.1"
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


@pytest.mark.parametrize("path", SEALED_PARAMS)
def test_sealed_sample_loads_with_its_seal_verified(path: Path) -> None:
    handoff = load(path)  # load() verifies the seal or raises
    assert handoff.seal is not None
    assert (handoff.agent_id, handoff.thread_id) == ("importer-agent", "importer-port")
    assert handoff.lineage.migrated_from is None
    assert any(decision.status == "deferred" for decision in handoff.decisions)
    assert handoff.state.active_tasks
    assert handoff.state.blocked_tasks
    assert handoff.state.completed_tasks
    assert handoff.context is not None


@pytest.mark.parametrize(("yaml", "json_"), [(V20_YAML, V20_JSON), (V21_YAML, V21_JSON)], ids=["v2.0", "v2.1"])
def test_yaml_sample_carries_human_comments_that_the_seal_ignores(yaml: Path, json_: Path) -> None:
    text = yaml.read_text(encoding="utf-8")
    header = YAML_HEADER.count("\n")
    own_line = [line for line in text.splitlines() if line.startswith("#")]
    trailing = [line for line in text.splitlines() if not line.startswith("#") and "  # " in line]
    assert len(own_line) > header
    assert trailing
    assert load(yaml).content() == load(json_).content()


@pytest.mark.parametrize("path", [V21_JSON, V21_YAML], ids=["json", "yaml"])
def test_2_1_sample_is_signed_by_the_sample_key_as_its_allowed_signers_names_it(path: Path) -> None:
    handoff = load(path)
    assert signature_damage(handoff, path) is None
    report = signer_report(handoff, path, allowed_signers=SAMPLE_SIGNERS)
    assert report is not None
    assert (report.principal, report.problem) == ("importer-agent@samples.invalid", None)
    public = (SAMPLES / "keys" / "sample-signer.pub").read_text(encoding="utf-8").split()[1]
    assert public in SAMPLE_SIGNERS.read_text(encoding="utf-8")
    untrusted = signer_report(handoff, path, allowed_signers=path.parent / "no-such-allowed-signers")
    assert untrusted is not None
    assert not untrusted.trusted


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
    path = _as_a_fresh_checkout_leaves_it(BROKEN / name, tmp_path)
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
        pytest.param("v2.1-flipped-byte.json", V21_JSON, id="v2.1"),
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
        pytest.param("v2.1-truncated.json", V21_JSON, id="v2.1"),
    ],
)
def test_truncated_sample_is_a_prefix_of_its_source(name: str, source: Path) -> None:
    broken = (BROKEN / name).read_bytes()
    assert 0 < len(broken) < source.stat().st_size
    assert source.read_bytes().startswith(broken)


def test_handoff_validate_gives_every_broken_samples_expected_kind_on_a_fresh_checkout(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    """``handoff validate`` on copies with the times of a fresh clone: the kinds expected.json names, none an edit."""
    copies = [_as_a_fresh_checkout_leaves_it(BROKEN / name, tmp_path) for name in sorted(EXPECTED)]
    done = subprocess.run(
        [sys.executable, "-m", "handoff_files", "validate", "--json", *map(str, copies)],
        capture_output=True,
        text=True,
        check=False,
        env=subprocess_env,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    entries = json.loads(done.stdout)
    assert len(entries) == len(copies)
    for copy, entry in zip(copies, entries, strict=True):
        expected = EXPECTED[copy.name]
        assert not entry["ok"], f"{copy.name} validated"
        assert (copy.name, entry["kind"]) == (copy.name, expected["error"]), entry["error"]
        assert expected["contains"] in entry["error"]


@pytest.mark.parametrize("name", ["v2.0-flipped-byte.json", "v2.0-wrong-seal.json"])
def test_a_2_0_seal_mismatch_in_a_file_on_its_own_is_damage_whatever_its_times(name: str, tmp_path: Path) -> None:
    """No file time makes a file on its own an edit: set back to its sealing, or far after it, the call is the same."""
    path = _as_a_fresh_checkout_leaves_it(BROKEN / name, tmp_path)
    created = load(V20_JSON).created_at.timestamp()
    for moment in (created, created + 3600, created + 10 * 365 * 86400):
        os.utime(path, (moment, moment))
        with pytest.raises(ChecksumMismatchError) as caught:
            load(path)
        assert "handoff seal` accepts" not in caught.value.reason


def test_the_wrong_seal_sample_is_told_as_a_damaged_seal(tmp_path: Path) -> None:
    """One hex digit of the digest changed: the content is intact, the seal itself was hit."""
    with pytest.raises(ChecksumMismatchError) as caught:
        load(_as_a_fresh_checkout_leaves_it(BROKEN / "v2.0-wrong-seal.json", tmp_path))
    assert "the seal itself is damaged: 1 of its digest's 64 hex digits" in caught.value.reason
