"""Bad input: each kind of damage or misuse raises its own typed HandoffError, naming the file."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import pickle
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

import orjson
import pytest
from ruamel.yaml import YAML

from handoff_files import (
    ChecksumMismatchError,
    HandoffError,
    HandoffNotFoundError,
    HandoffParseError,
    HandoffStore,
    HandoffTooLargeError,
    HandoffValidationError,
    InvalidNameError,
    UnsealedEditError,
    UnsupportedVersionError,
    load,
)
from handoff_files.format.loader import decode
from handoff_files.format.seal import canonical, digest
from handoff_files.foundation import errors
from handoff_files.thread.layout import MIRROR_NAME
from handoff_files.thread.mirror import primary_stamp

CONTENT: Final[dict[str, Any]] = {
    "narrative": "Migrated half the tables — naïve retry loop removed ✓",
    "state": {"active_tasks": ["finish the migration"], "data": {"retries": 3, "owner": "Zoë"}},
    "priorities": [{"task": "re-run the import", "urgency": "first"}],
    "warnings": [{"text": "staging DB is shared", "severity": "high"}],
}

Damage = Callable[[bytes], bytes]
Format = Literal["json", "yaml"]
E = TypeVar("E", bound=HandoffError)


def sub(old: str, new: str) -> Damage:
    """Replace the one occurrence of *old* in a file's text (failing loudly if the anchor moved)."""

    def damage(data: bytes) -> bytes:
        assert data.count(old.encode()) == 1, f"{old!r} should occur once in:\n{data.decode()}"
        return data.replace(old.encode(), new.encode())

    return damage


def saved(tmp_path: Path, fmt: Format = "json", content: dict[str, Any] = CONTENT) -> Path:
    """Save *content* as generation 1 of a fresh thread and return the primary's path."""
    return HandoffStore(tmp_path / f"thread-{fmt}", format=fmt).save(content).path


def resealed(document: dict[str, Any]) -> dict[str, Any]:
    """Seal *document* again, so only the change under test (not a stale seal) can be refused."""
    document["seal"] = {"algorithm": "blake3", "digest": digest(canonical(document))}
    return document


def write_json(path: Path, document: dict[str, Any]) -> Path:
    path.write_text(json.dumps(document, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


def assert_names_file(exc: HandoffError, path: Path) -> None:
    assert exc.path == os.fspath(path)
    assert exc.reason
    assert str(exc) == f"{path}: {exc.reason}"


def load_fails(path: Path, expected: type[E]) -> E:
    with pytest.raises(expected) as info:
        load(path)
    assert_names_file(info.value, path)
    return info.value


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file under *directory*, by relative name, with its bytes."""
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


# -- syntax: not strict JSON / safe YAML -------------------------------------------------------

JSON_PARSE_DAMAGE = [
    pytest.param(lambda data: data[: len(data) // 2], "invalid JSON", id="truncated"),
    pytest.param(lambda data: b"", "top level", id="empty"),
    pytest.param(sub('"owner": "Zoë"', '"owner": "Zoë",'), "invalid JSON", id="trailing-comma"),
    pytest.param(sub('"owner": "Zoë"', "'owner': 'Zoë'"), "invalid JSON", id="single-quotes"),
    pytest.param(sub('"retries": 3,', '"retries": 3, // three'), "invalid JSON", id="comment"),
    pytest.param(sub('"retries": 3,', "retries: 3,"), "invalid JSON", id="unquoted-key"),
    pytest.param(
        sub('"generation": 1,', '"generation": 1,\n  "generation": 1,'),
        "duplicate key 'generation'",
        id="duplicate-top-level-key",
    ),
    pytest.param(
        sub('"generation": 1,', '"generation": 1,\n  "generation": 2,'),
        "duplicate key 'generation'",
        id="duplicate-top-level-key-differing",
    ),
    pytest.param(
        sub('"adopted_from": null,', '"adopted_from": null,\n    "adopted_from": null,'),
        "duplicate key 'adopted_from'",
        id="duplicate-nested-key",
    ),
    pytest.param(
        sub('"retries": 3,', '"retries": 3,\n      "retries": 4,'),
        "duplicate key 'retries'",
        id="duplicate-key-in-state-data",
    ),
    pytest.param(
        sub('"retries": 3,', '"retries": {"a": 1, "a": 1},'), "duplicate key 'a'", id="duplicate-key-deep-in-state-data"
    ),
    pytest.param(sub('"retries": 3,', '"retries": NaN,'), "NaN", id="nan"),
    pytest.param(sub('"retries": 3,', '"retries": Infinity,'), "Infinity", id="infinity"),
    pytest.param(sub('"retries": 3,', '"retries": -Infinity,'), "-Infinity", id="minus-infinity"),
    pytest.param(sub('"energy_level": 1.0,', '"energy_level": NaN,'), "NaN", id="nan-in-model-field"),
    pytest.param(sub('"retries": 3,', '"retries": 1e400,'), "finite", id="float-overflowing-to-infinity"),
    pytest.param(sub('"retries": 3,', '"retries": 18446744073709551616,'), "64 bits", id="int-2**64"),
    pytest.param(sub('"retries": 3,', '"retries": -9223372036854775809,'), "64 bits", id="int-below-minus-2**63"),
    pytest.param(sub('"retries": 3,', f'"retries": {10**40},'), "64 bits", id="int-of-40-digits"),
    pytest.param(
        sub('"retries": 3,', '"retries": ' + "[" * 100 + "]" * 100 + ","),
        "nested deeper",
        id="100-levels-in-state-data",
    ),
    pytest.param(sub('"owner": "Zoë"', '"owner": "\\ud800"'), "surrogate", id="lone-surrogate-escape"),
    pytest.param(lambda data: data.replace("Zoë".encode(), b"Zo\xeb"), "UTF-8", id="invalid-utf8-latin1-byte"),
    pytest.param(lambda data: data.replace("✓".encode(), "✓".encode()[:2]), "UTF-8", id="invalid-utf8-cut-sequence"),
    pytest.param(lambda data: data.replace(b"Migrated", b"Migr\xc0\xafted"), "UTF-8", id="invalid-utf8-overlong"),
    pytest.param(lambda data: b"\xef\xbb\xbf" + data, "byte-order mark", id="utf8-bom"),
    pytest.param(lambda data: b"[" + data + b"]", "top level", id="top-level-list"),
    pytest.param(lambda data: b'"a handoff"', "top level", id="top-level-string"),
    pytest.param(lambda data: data + data, "invalid JSON", id="two-documents"),
]


@pytest.mark.parametrize(("damage", "says"), JSON_PARSE_DAMAGE)
def test_json_that_is_not_strict_json_is_a_parse_error_saying_why(tmp_path: Path, damage: Damage, says: str) -> None:
    path = saved(tmp_path, "json")
    path.write_bytes(damage(path.read_bytes()))
    assert says in load_fails(path, HandoffParseError).reason


YAML_PARSE_DAMAGE = [
    pytest.param(lambda data: data[: data.index(b"created_at: '") + 20], "invalid YAML", id="truncated-inside-a-quote"),
    pytest.param(sub("    retries: 3\n", "    retries: [3\n"), "invalid YAML", id="unclosed-flow-sequence"),
    pytest.param(sub("    owner: Zoë\n", "   owner: Zoë\n"), "invalid YAML", id="bad-indentation"),
    pytest.param(sub("    owner: Zoë\n", "\towner: Zoë\n"), "invalid YAML", id="tab-indentation"),
    pytest.param(
        sub("generation: 1\n", "generation: 1\ngeneration: 1\n"), "duplicate key", id="duplicate-top-level-key"
    ),
    pytest.param(
        sub("  adopted_from: null\n", "  adopted_from: null\n  adopted_from: null\n"),
        "duplicate key",
        id="duplicate-nested-key",
    ),
    pytest.param(
        sub("    retries: 3\n", "    retries: 3\n    retries: 4\n"), "duplicate key", id="duplicate-key-in-state-data"
    ),
    pytest.param(
        sub("    retries: 3\n", "    retries: {a: 1, a: 1}\n"), "duplicate key", id="duplicate-key-in-flow-mapping"
    ),
    pytest.param(sub("    retries: 3\n", "    retries: .nan\n"), "finite", id="nan"),
    pytest.param(sub("    retries: 3\n", "    retries: .NaN\n"), "finite", id="nan-capitalised"),
    pytest.param(sub("    retries: 3\n", "    retries: .inf\n"), "finite", id="inf"),
    pytest.param(sub("    retries: 3\n", "    retries: -.inf\n"), "finite", id="minus-inf"),
    pytest.param(sub("  energy_level: 1.0\n", "  energy_level: .nan\n"), "finite", id="nan-in-model-field"),
    pytest.param(sub("    retries: 3\n", "    retries: 1e400\n"), "finite", id="float-overflowing-to-infinity"),
    pytest.param(sub("    retries: 3\n", "    retries: 18446744073709551616\n"), "64 bits", id="int-2**64"),
    pytest.param(sub("    retries: 3\n", "    retries: 0x1_0000_0000_0000_0000\n"), "64 bits", id="hex-int-2**64"),
    pytest.param(sub("    retries: 3\n", "    retries: !!binary aGVsbG8=\n"), "bytes", id="binary-tag"),
    pytest.param(sub("    retries: 3\n", "    retries: !!set {a, b}\n"), "a set", id="set-tag"),
    pytest.param(sub("    retries: 3\n", "    retries: !!pairs [a: 1]\n"), "tuple", id="pairs-tag"),
    pytest.param(
        sub("    retries: 3\n", "    retries: !!python/name:os.system\n"), "python/name", id="python-name-tag"
    ),
    pytest.param(
        sub("    retries: 3\n", "    retries: !!python/object/new:dict {}\n"),
        "python/object/new",
        id="python-object-new-tag",
    ),
    pytest.param(sub("    retries: 3\n", "    retries: !local thing\n"), "!local", id="local-tag"),
    pytest.param(sub("    retries: 3\n", "    1: 3\n"), "keys must be strings", id="integer-key"),
    pytest.param(sub("    retries: 3\n", "    ? [a, b]\n    : 3\n"), "keys must be strings", id="sequence-key"),
    pytest.param(sub("    retries: 3\n", "    retries: *nowhere\n"), "undefined alias", id="undefined-alias"),
    pytest.param(sub("    retries: 3\n", "    retries: &loop [*loop]\n"), "nested deeper", id="self-referencing-alias"),
    pytest.param(
        sub("    retries: 3\n", "    retries: " + "[" * 100 + "]" * 100 + "\n"),
        "nested deeper",
        id="100-levels-in-state-data",
    ),
    pytest.param(sub("    retries: 3\n", "    retries: \x07\n"), "unacceptable character", id="control-character"),
    pytest.param(lambda data: data.replace("Zoë".encode(), b"Zo\xeb"), "UTF-8", id="invalid-utf8-latin1-byte"),
    pytest.param(lambda data: data.replace("✓".encode(), "✓".encode()[:2]), "UTF-8", id="invalid-utf8-cut-sequence"),
    pytest.param(lambda data: b"\xef\xbb\xbf" + data, "byte-order mark", id="utf8-bom"),
    pytest.param(lambda data: b"- " + data.replace(b"\n", b"\n  "), "top level", id="top-level-list"),
    pytest.param(lambda data: b"just a sentence\n", "top level", id="top-level-string"),
    pytest.param(lambda data: b"", "top level", id="empty"),
    pytest.param(lambda data: data + b"---\n" + data, "single document", id="two-documents"),
    pytest.param(lambda data: b"%YAML 2.0\n---\n" + data, "incompatible YAML document", id="unknown-yaml-version"),
]


@pytest.mark.parametrize(("damage", "says"), YAML_PARSE_DAMAGE)
def test_yaml_that_is_not_safe_yaml_is_a_parse_error_saying_why(tmp_path: Path, damage: Damage, says: str) -> None:
    path = saved(tmp_path, "yaml")
    path.write_bytes(damage(path.read_bytes()))
    assert says in load_fails(path, HandoffParseError).reason


# The safe loader's constructors raise ValueError, KeyError or AssertionError (not YAMLError) for
# these; the codec wraps only YAMLError and RecursionError, so they escape load() unwrapped.
YAML_UNCONSTRUCTIBLE = [
    pytest.param("2024-13-45", id="date-with-month-13"),
    pytest.param("2024-02-30", id="date-february-30"),
    pytest.param("0000-01-01", id="date-year-0"),
    pytest.param("2024-01-01T25:00:00Z", id="timestamp-hour-25"),
    pytest.param("2024-01-01T00:00:00+25:00", id="timestamp-offset-25-hours"),
    pytest.param("0x_", id="hex-int-with-no-digits"),
    pytest.param("!!float abc", id="float-tag-on-text"),
    pytest.param("!!int abc", id="int-tag-on-text"),
    pytest.param("!!bool maybe", id="bool-tag-on-text"),
    pytest.param("!!timestamp 2024-13-01", id="timestamp-tag-on-bad-date"),
    pytest.param("!!omap [{a: 1}, {a: 2}]", id="omap-with-duplicate-keys"),
    pytest.param('"\\ud800"', id="lone-surrogate-escape"),
]


@pytest.mark.parametrize("value", YAML_UNCONSTRUCTIBLE)
def test_yaml_scalar_the_safe_loader_cannot_construct_is_a_parse_error(tmp_path: Path, value: str) -> None:
    path = saved(tmp_path, "yaml")
    path.write_bytes(sub("    retries: 3\n", f"    retries: {value}\n")(path.read_bytes()))
    load_fails(path, HandoffParseError)


def test_yaml_lone_surrogate_in_a_model_field_is_a_parse_error(tmp_path: Path) -> None:
    # a person, or bit rot (\uFF08 -> \uDF08 is one flipped bit), leaves a lone surrogate escape
    path = saved(tmp_path, "yaml")
    path.write_bytes(sub(f"narrative: {CONTENT['narrative']}\n", 'narrative: "\\uDF08"\n')(path.read_bytes()))
    load_fails(path, HandoffParseError)


def test_yaml_python_tag_is_refused_without_running_anything(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = saved(tmp_path, "yaml")
    tag = f"!!python/object/apply:os.system ['touch {marker}']"
    path.write_bytes(sub("    retries: 3\n", f"    retries: {tag}\n")(path.read_bytes()))
    exc = load_fails(path, HandoffParseError)
    assert "python/object/apply" in exc.reason
    assert not marker.exists()


BILLION_LAUGHS = "".join(
    [
        'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n',
        *(f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True)),
    ]
)


@pytest.mark.parametrize(
    "where", [pytest.param("whole-file", id="whole-file"), pytest.param("state-data", id="state-data")]
)
def test_yaml_billion_laughs_is_refused_quickly(tmp_path: Path, where: str) -> None:
    if where == "whole-file":
        path = tmp_path / "bomb.yaml"
        path.write_text(BILLION_LAUGHS, encoding="utf-8")
    else:
        path = saved(tmp_path, "yaml")
        nested = "".join(f"      {line}\n" for line in BILLION_LAUGHS.splitlines())
        path.write_bytes(sub("    retries: 3\n", f"    retries:\n{nested}")(path.read_bytes()))
    started = time.perf_counter()
    exc = load_fails(path, HandoffParseError)
    assert time.perf_counter() - started < 0.5
    assert "alias" in exc.reason


DEEP_JSON = [
    pytest.param('{"a": ' + "[" * 100 + "]" * 100 + "}", id="100-lists"),
    pytest.param('{"a": ' * 100 + "1" + "}" * 100, id="100-objects"),
    pytest.param('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", id="100000-lists"),
    pytest.param('{"a": ' * 100_000 + "1" + "}" * 100_000, id="100000-objects"),
    pytest.param('{"a": ' + "[" * 100_000, id="100000-unclosed-lists"),
    pytest.param('{"a": ' + '{"b": [' * 50_000 + "]}" * 50_000 + "}", id="100000-alternating"),
    # a first byte other than "{" makes the codec read the file as YAML: still refused, by depth
    pytest.param("[" * 100_000 + "]" * 100_000, id="100000-lists-at-top-level"),
]


@pytest.mark.parametrize("text", DEEP_JSON)
def test_deeply_nested_json_is_a_parse_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "deep.json"
    path.write_text(text, encoding="utf-8")
    exc = load_fails(path, HandoffParseError)
    assert "nested deeper" in exc.reason


DEEP_YAML = [
    pytest.param("a: " + "[" * 100 + "]" * 100 + "\n", id="100-flow-lists"),
    pytest.param("a: " + "{b: " * 100 + "1" + "}" * 100 + "\n", id="100-flow-mappings"),
    pytest.param("".join(f"{'  ' * i}k{i}:\n" for i in range(100)) + "  " * 100 + "leaf\n", id="100-block-mappings"),
    pytest.param(
        "a:\n" + "".join(f"{'  ' * i}- \n" for i in range(1, 100)) + "  " * 100 + "- leaf\n", id="100-block-lists"
    ),
    pytest.param("a: " + "[" * 100_000 + "]" * 100_000 + "\n", id="100000-flow-lists"),
    pytest.param("a: " + "{b: " * 100_000 + "}" * 100_000 + "\n", id="100000-flow-mappings"),
    pytest.param("a: " + "[" * 100_000 + "\n", id="100000-unclosed-flow-lists"),
]


@pytest.mark.parametrize("text", DEEP_YAML)
def test_deeply_nested_yaml_is_a_parse_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(text, encoding="utf-8")
    exc = load_fails(path, HandoffParseError)
    assert "nested deeper" in exc.reason


def test_file_over_the_size_limit_is_refused_as_too_large(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as file:
        file.truncate(50 * 1024 * 1024)  # sparse: the loader must refuse it by size, before reading
    exc = load_fails(path, HandoffTooLargeError)
    assert isinstance(exc, HandoffParseError)


def test_missing_file_is_not_found(tmp_path: Path) -> None:
    path = tmp_path / "absent.json"
    exc = load_fails(path, HandoffNotFoundError)
    assert isinstance(exc, FileNotFoundError)


def test_directory_is_not_a_handoff(tmp_path: Path) -> None:
    load_fails(tmp_path, HandoffError)


def test_symlink_is_refused_when_not_following_symlinks(tmp_path: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(saved(tmp_path))
    with pytest.raises(HandoffError) as info:
        load(link, follow_symlinks=False)
    assert_names_file(info.value, link)


# -- integers past 64 bits, whatever the layout -------------------------------------------------


def store_layout(document: dict[str, Any]) -> bytes:
    """The bytes the store writes (orjson, indent 2): what the loader's fast path recognises."""
    return orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"


def compact_layout(document: dict[str, Any]) -> bytes:
    return json.dumps(document, ensure_ascii=False).encode()


@pytest.mark.parametrize(
    ("layout", "value"),
    [
        pytest.param(compact_layout, 2**64, id="compact-2**64"),
        pytest.param(compact_layout, -(2**63) - 1, id="compact-minus-2**63-1"),
        pytest.param(compact_layout, 10**30, id="compact-10**30"),
    ],
)
def test_sealed_integer_past_64_bits_is_a_parse_error_whatever_the_layout(
    tmp_path: Path, layout: Callable[[dict[str, Any]], bytes], value: int
) -> None:
    path = saved(tmp_path)
    document = json.loads(path.read_bytes())
    document["state"]["data"]["retries"] = value
    # past the canonical encoder's range no seal can cover the value: the parse must refuse it first
    with contextlib.suppress(ValueError):
        resealed(document)
    path.write_bytes(layout(document))
    exc = load_fails(path, HandoffParseError)
    assert "64 bits" in exc.reason


@pytest.mark.parametrize(
    ("layout", "value"),
    [
        # free-form data takes what the canonical encoder writes exactly: signed and unsigned 64-bit
        pytest.param(store_layout, 2**63, id="store-layout-2**63"),
        pytest.param(store_layout, 2**64 - 1, id="store-layout-2**64-1"),
        pytest.param(compact_layout, 2**64 - 1, id="compact-2**64-1"),
        pytest.param(compact_layout, -(2**63), id="compact-minus-2**63"),
    ],
)
def test_free_form_integers_in_the_64_bit_range_load_the_same_whatever_the_layout(
    tmp_path: Path, layout: Callable[[dict[str, Any]], bytes], value: int
) -> None:
    path = saved(tmp_path)
    document = json.loads(path.read_bytes())
    document["state"]["data"]["retries"] = value
    path.write_bytes(layout(resealed(document)))
    assert load(path).state.data["retries"] == value
    assert HandoffStore(path.parent).save(load(path)).generation == 2


# -- versions -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "named"),
    [
        pytest.param(None, ["no schema_version", "2.0"], id="missing"),
        pytest.param(2.0, ["found 2.0", "'2.1'", "string"], id="number-2.0"),
        pytest.param(2, ["found 2", "'2.1'"], id="number-2"),
        pytest.param("1.5", ["'1.5'", "2.0"], id="unknown-older"),
        pytest.param("3.0", ["'3.0'", "newer", "'2.1'", "upgrade"], id="newer"),
        pytest.param("2.0.1", ["'2.0.1'", "2.0"], id="newer-patch"),
        pytest.param("two", ["'two'", "2.0"], id="not-a-number"),
        pytest.param("", ["''", "2.0"], id="empty"),
    ],
)
def test_unsupported_schema_version_names_found_and_known_versions(
    tmp_path: Path, version: object, named: list[str]
) -> None:
    path = saved(tmp_path)
    document = json.loads(path.read_bytes())
    if version is None:
        del document["schema_version"]
    else:
        document["schema_version"] = version
    exc = load_fails(write_json(path, document), UnsupportedVersionError)
    for text in named:
        assert text in exc.reason


def test_unsupported_version_in_yaml_is_named(tmp_path: Path) -> None:
    path = saved(tmp_path, "yaml")
    path.write_bytes(sub("schema_version: '2.1'", "schema_version: 2.1")(path.read_bytes()))
    exc = load_fails(path, UnsupportedVersionError)
    assert "found 2.1 (float)" in exc.reason


# -- names and paths ----------------------------------------------------------------------------

BAD_IDS = [
    pytest.param("../../etc", id="parent-traversal"),
    pytest.param("a/../../b", id="embedded-traversal"),
    pytest.param("/etc", id="absolute"),
    pytest.param("..", id="dot-dot"),
    pytest.param(".hidden", id="leading-dot"),
    pytest.param("-rf", id="leading-dash"),
    pytest.param("my thread", id="space"),
    pytest.param("", id="empty"),
    pytest.param("a" * 65, id="65-characters"),
    pytest.param("thread\n", id="trailing-newline"),
    pytest.param("thréad", id="non-ascii"),
    pytest.param("a\x00b", id="nul"),
]


def open_store(directory: Path, which: str, value: str) -> HandoffStore:
    if which == "thread_id":
        return HandoffStore(directory, thread_id=value)
    return HandoffStore(directory, agent_id=value)


@pytest.mark.parametrize("which", ["thread_id", "agent_id"])
@pytest.mark.parametrize("bad", BAD_IDS)
def test_invalid_id_given_to_the_store_is_an_invalid_name(tmp_path: Path, which: str, bad: str) -> None:
    directory = tmp_path / "thread-1"
    with pytest.raises(InvalidNameError) as info:
        open_store(directory, which, bad)
    assert_names_file(info.value, directory)
    assert repr(bad) in info.value.reason
    assert which in info.value.reason
    assert not directory.exists()


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("..", id="dot-dot"),
        pytest.param("%%%", id="nothing-valid"),
        pytest.param("---", id="dashes-only"),
    ],
)
def test_thread_directory_whose_name_gives_no_id_is_an_invalid_name(tmp_path: Path, name: str) -> None:
    directory = tmp_path / "sub" / name
    with pytest.raises(InvalidNameError) as info:
        HandoffStore(directory)
    assert_names_file(info.value, directory)
    assert "no valid id can be made from the folder name" in info.value.reason
    assert "thread_id=" in info.value.reason  # the library names its keywords; the CLI its options


@pytest.mark.parametrize(
    ("name", "derived"),
    [
        pytest.param("..hidden", "hidden", id="dot-dot-prefix"),
        pytest.param("my thread", "my-thread", id="space"),
        pytest.param("thread;rm", "thread-rm", id="semicolon"),
        pytest.param("Café notes", "Cafe-notes", id="accents"),
    ],
)
def test_thread_directory_with_an_invalid_name_gets_ids_made_from_it_and_says_so(
    tmp_path: Path, name: str, derived: str
) -> None:
    directory = tmp_path / "sub" / name
    receipt = HandoffStore(directory).save({"narrative": "n"})
    handoff = load(receipt.path)
    assert (handoff.agent_id, handoff.thread_id) == (derived, derived)
    assert any(f"made from it: {derived!r}" in problem for problem in receipt.problems), receipt.problems
    again = HandoffStore(directory).save({"narrative": "m"})
    assert again.problems == ()  # said once, on the first save


# -- documents that parse but do not match the schema -------------------------------------------


def _set(*keys: str, value: object) -> Callable[[dict[str, Any]], None]:
    def change(document: dict[str, Any]) -> None:
        target = document
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return change


INVALID_DOCUMENTS = [
    pytest.param(_set("thread_id", value="../x"), "thread_id", id="thread-id-traversal"),
    pytest.param(_set("agent_id", value="a b"), "agent_id", id="agent-id-with-space"),
    pytest.param(_set("surprise", value=1), "surprise", id="unknown-top-level-key"),
    pytest.param(_set("state", "surprise", value=1), "state.surprise", id="unknown-state-key"),
    pytest.param(_set("state", "energy_level", value=1.5), "energy_level", id="energy-level-1.5"),
    pytest.param(_set("state", "energy_level", value=-0.1), "energy_level", id="energy-level-negative"),
    pytest.param(_set("state", "error_count", value=-1), "error_count", id="negative-error-count"),
    pytest.param(_set("state", "error_count", value="3"), "error_count", id="error-count-as-text"),
    pytest.param(_set("state", "error_count", value=True), "error_count", id="error-count-as-bool"),
    pytest.param(_set("created_at", value="2024-05-01T12:00:00"), "created_at", id="naive-created-at"),
    pytest.param(_set("created_at", value="yesterday"), "created_at", id="created-at-not-a-time"),
    pytest.param(_set("generation", value=0), "generation", id="generation-0"),
    pytest.param(_set("priorities", value=[{"task": "t", "urgency": "asap"}]), "urgency", id="bad-urgency"),
    pytest.param(_set("priorities", value=[{"task": "", "urgency": "first"}]), "task", id="empty-task"),
    pytest.param(_set("warnings", value=[{"text": "w", "severity": "dire"}]), "severity", id="bad-severity"),
    pytest.param(_set("narrative", value=None), "narrative", id="narrative-null"),
    pytest.param(_set("state", value=[]), "state", id="state-a-list"),
    pytest.param(_set("parent", value="not-a-digest"), "parent", id="bad-parent"),
]


@pytest.mark.parametrize(("change", "field"), INVALID_DOCUMENTS)
@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_sealed_document_that_breaks_the_schema_is_a_validation_error(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], field: str, fmt: Format
) -> None:
    path = saved(tmp_path)
    document = json.loads(path.read_bytes())
    change(document)
    target = tmp_path / f"changed.{fmt}"
    if fmt == "json":
        write_json(target, resealed(document))
    else:
        with target.open("w", encoding="utf-8") as file:
            YAML(typ="safe", pure=True).dump(resealed(document), file)
    exc = load_fails(target, HandoffValidationError)
    assert field in exc.reason


def test_unsealed_document_that_breaks_the_schema_is_a_validation_error(tmp_path: Path) -> None:
    path = saved(tmp_path)
    document = json.loads(path.read_bytes())
    del document["seal"]
    document["thread_id"] = "../x"
    write_json(path, document)  # written by hand, with no seal: its mistakes are its writer's to mend
    exc = load_fails(path, HandoffValidationError)
    assert "thread_id" in exc.reason


# -- save() refuses bad content and writes nothing ----------------------------------------------


class Opaque:
    """Stands for any object with no JSON form."""


BAD_CONTENT = [
    pytest.param({**CONTENT, "generation": 7}, "generation", id="envelope-generation"),
    pytest.param({**CONTENT, "seal": {"algorithm": "blake3", "digest": "0" * 64}}, "seal", id="envelope-seal"),
    pytest.param({**CONTENT, "schema_version": "2.0"}, "schema_version", id="envelope-schema-version"),
    pytest.param({**CONTENT, "thread_id": "../x"}, "thread_id", id="envelope-thread-id"),
    pytest.param({**CONTENT, "created_at": "2024-01-01T00:00:00Z"}, "created_at", id="envelope-created-at"),
    pytest.param({**CONTENT, "surprise": 1}, "surprise", id="unknown-key"),
    pytest.param({"state": {"data": {"x": float("nan")}}}, "nan", id="nan-in-state-data"),
    pytest.param({"state": {"data": {"x": [1.0, float("inf")]}}}, "inf", id="inf-in-state-data"),
    pytest.param({"state": {"data": {"x": {"a", "b"}}}}, "set", id="set-in-state-data"),
    pytest.param({"state": {"data": {"x": dt.datetime(2024, 1, 1, tzinfo=dt.UTC)}}}, "datetime", id="datetime"),
    pytest.param({"state": {"data": {"x": b"bytes"}}}, "bytes", id="bytes-in-state-data"),
    pytest.param({"state": {"data": {"x": (1, 2)}}}, "tuple", id="tuple-in-state-data"),
    pytest.param({"state": {"data": {"x": Opaque()}}}, "Opaque", id="object-in-state-data"),
    pytest.param({"state": {"data": {1: "x"}}}, "state.data", id="int-key-in-state-data"),
    pytest.param({"state": {"data": {"x": 2**64}}}, "64 bits", id="int-past-64-bits-in-state-data"),
    pytest.param({"state": {"data": {"x": "\ud800"}}}, "state.data", id="lone-surrogate-in-state-data"),
    pytest.param({"state": {"energy_level": float("nan")}}, "energy_level", id="nan-energy-level"),
    pytest.param({"state": {"energy_level": 1.5}}, "energy_level", id="energy-level-1.5"),
    pytest.param({"state": {"error_count": -1}}, "error_count", id="negative-error-count"),
    pytest.param({"priorities": [{"task": "t", "urgency": "asap"}]}, "urgency", id="bad-urgency"),
    pytest.param({"narrative": "\ud800"}, "narrative", id="lone-surrogate-in-narrative"),
]


@pytest.mark.parametrize(("content", "named"), BAD_CONTENT)
@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_save_of_bad_content_is_a_validation_error_and_writes_nothing(
    tmp_path: Path, content: dict[str, Any], named: str, fmt: Format
) -> None:
    fresh = HandoffStore(tmp_path / "fresh", format=fmt)
    with pytest.raises(HandoffValidationError) as info:
        fresh.save(content)
    assert_names_file(info.value, fresh.path)
    assert named in info.value.reason
    assert not fresh.primary.exists()
    assert not list(fresh.history_dir.glob("*"))

    existing = HandoffStore(tmp_path / "existing", format=fmt)
    existing.save(CONTENT)
    before = snapshot(existing.path)
    with pytest.raises(HandoffValidationError):
        existing.save(content)
    assert snapshot(existing.path) == before
    assert load(existing.primary).generation == 1


def test_save_of_something_that_is_not_a_mapping_is_a_validation_error(tmp_path: Path) -> None:
    store = HandoffStore(tmp_path / "thread-1")
    with pytest.raises(HandoffValidationError) as info:
        store.save(["narrative"])  # type: ignore[arg-type]
    assert_names_file(info.value, store.path)
    assert not store.primary.exists()


# -- seal: an edit after sealing, or corruption -------------------------------------------------

EDITED = "Edited by hand — the loop is back ✗"


def _edit_narrative(path: Path, fmt: Format) -> None:
    old = f'"narrative": "{CONTENT["narrative"]}"' if fmt == "json" else f"narrative: {CONTENT['narrative']}"
    new = f'"narrative": "{EDITED}"' if fmt == "json" else f"narrative: {EDITED}"
    path.write_bytes(sub(old, new)(path.read_bytes()))


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_primary_edited_after_sealing_is_an_unsealed_edit_carrying_the_edit(tmp_path: Path, fmt: Format) -> None:
    """The thread records its primary as written (state.json): a file rewritten since is a person's edit."""
    path = saved(tmp_path, fmt)
    _edit_narrative(path, fmt)
    with pytest.raises(UnsealedEditError) as info:
        load(path, written=primary_stamp(path.parent / MIRROR_NAME))
    assert info.value.handoff is not None
    assert info.value.handoff.narrative == EDITED
    assert info.value.handoff.state.data == CONTENT["state"]["data"]


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_bytes_a_person_edited_on_purpose_are_an_unsealed_edit(tmp_path: Path, fmt: Format) -> None:
    path = saved(tmp_path, fmt)
    _edit_narrative(path, fmt)
    with pytest.raises(UnsealedEditError) as info:
        decode(path.read_bytes(), path, origin="edit")
    assert info.value.handoff is not None
    assert info.value.handoff.narrative == EDITED


@pytest.mark.parametrize("fmt", ["json", "yaml"])
@pytest.mark.parametrize("later", [pytest.param(0, id="mtime-of-the-seal"), pytest.param(3600, id="an-hour-on")])
def test_changed_file_on_its_own_is_a_checksum_mismatch_whatever_its_times(
    tmp_path: Path, fmt: Format, later: int
) -> None:
    # a file on its own keeps no record of its writing: its times (a copy, a checkout) decide nothing
    path = saved(tmp_path, fmt)
    created = load(path).created_at.timestamp()
    _edit_narrative(path, fmt)
    os.utime(path, (created + later, created + later))
    exc = load_fails(path, ChecksumMismatchError)
    assert getattr(exc, "handoff", None) is None
    assert EDITED not in str(exc)


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_document_with_no_seal_is_an_unsealed_edit(tmp_path: Path, fmt: Format) -> None:
    path = saved(tmp_path, fmt)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    if fmt == "json":
        start = lines.index('  "seal": {\n')
        path.write_text("".join(lines[:start] + lines[start + 4 :]), encoding="utf-8")
    else:
        start = lines.index("seal:\n")
        path.write_text("".join(lines[:start] + lines[start + 3 :]), encoding="utf-8")
    exc = load_fails(path, UnsealedEditError)  # its layers are there: written or unsealed by a person
    assert exc.handoff is not None
    assert exc.handoff.seal is None
    assert exc.handoff.narrative == CONTENT["narrative"]


@pytest.mark.parametrize(
    "cut_after",
    [
        pytest.param("Z'\n", id="after-created-at"),
        pytest.param("parent: null\n", id="after-parent"),
        pytest.param("migrated_from: null\n", id="after-lineage"),
        pytest.param("seal:\n", id="inside-seal"),
    ],
)
def test_yaml_file_truncated_before_its_seal_is_not_offered_as_an_edit(tmp_path: Path, cut_after: str) -> None:
    # the envelope alone is a valid handoff with empty layers: offering it as a person's edit
    # invites `handoff seal` to make the loss of every layer the next generation
    path = saved(tmp_path, "yaml")
    data = path.read_bytes()
    path.write_bytes(data[: data.index(cut_after.encode()) + len(cut_after)])  # file times: now, as a copy's
    exc = load_fails(path, HandoffError)
    assert not isinstance(exc, UnsealedEditError), exc.reason


# -- every error pickles ------------------------------------------------------------------------

ERROR_CLASSES = [getattr(errors, name) for name in errors.__all__]


@pytest.mark.parametrize("cls", [pytest.param(cls, id=cls.__name__) for cls in ERROR_CLASSES])
def test_every_error_round_trips_through_pickle_with_its_path_and_reason(cls: type[HandoffError]) -> None:
    error = cls("/threads/t-1/handoff.json", "expected X, found Y; do Z")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is cls
    assert copy.path == "/threads/t-1/handoff.json"
    assert copy.reason == "expected X, found Y; do Z"
    assert str(copy) == str(error) == "/threads/t-1/handoff.json: expected X, found Y; do Z"


def test_unsealed_edit_error_pickles_with_its_handoff(tmp_path: Path) -> None:
    path = saved(tmp_path)
    handoff = load(path)
    error = UnsealedEditError(path, "edited", handoff)
    copy = pickle.loads(pickle.dumps(error))
    assert copy.path == os.fspath(path)
    assert copy.reason == "edited"
    assert copy.handoff == handoff


def test_error_raised_by_load_pickles(tmp_path: Path) -> None:
    path = saved(tmp_path, "yaml")
    _edit_narrative(path, "yaml")
    with pytest.raises(UnsealedEditError) as info:
        load(path, written=primary_stamp(path.parent / MIRROR_NAME))
    exc = info.value
    copy = pickle.loads(pickle.dumps(exc))
    assert (copy.path, copy.reason) == (exc.path, exc.reason)
    assert isinstance(copy, UnsealedEditError)
    assert copy.handoff == exc.handoff
