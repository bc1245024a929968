"""Versions: which schema versions are read, their checks, and the in-memory migration chain to the current one."""

from __future__ import annotations

import hashlib
import hmac
import importlib
import importlib.util
import json
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from handoff_files.format.model import NATIVE_VERSIONS, SCHEMA_VERSION
from handoff_files.foundation.errors import ChecksumMismatchError, HandoffMigrationError, UnsupportedVersionError

__all__ = [
    "EXTRA",
    "KNOWN_VERSIONS",
    "LEGACY_VERSIONS",
    "NOTES",
    "Step",
    "check_version",
    "legacy_checksum",
    "migrate_document",
    "steps",
    "verify_legacy_checksum",
]

#: Versions this library reads, oldest first; the last one is the one it writes.
KNOWN_VERSIONS: Final = ("0.8", "1.0", *NATIVE_VERSIONS)
#: Versions sealed by a 16-hex sha256 over ``state`` alone (as the published write-up defines it).
LEGACY_VERSIONS: Final = frozenset({"0.8", "1.0"})

_STEP_NAME: Final = re.compile(r"^v(\d+)_(\d+)_to_v(\d+)_(\d+)$")


class _Key:
    """A dict key no parsed document can hold (JSON and YAML keys here are strings)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


#: Where a step leaves its notes in the dict it returns.
NOTES: Final = _Key("migration notes")
#: Where a step leaves keys outside its format for the next step to file.
EXTRA: Final = _Key("keys outside the format")


@dataclass(frozen=True, slots=True)
class Step:
    """One migration step, as found in ``migrations/``."""

    source: str
    target: str
    upgrade: Callable[[Mapping[Any, Any]], dict[Any, Any]]
    name: str


def _step_modules() -> list[ModuleType]:
    """Import the step modules: from the installed package, else from a source checkout's folder."""
    import pkgutil  # noqa: PLC0415 -- only a migration looks for its steps; a current file's load never does

    try:
        package = importlib.import_module("handoff_files.migrations")
        return [
            importlib.import_module(f"handoff_files.migrations.{info.name}")
            for info in pkgutil.iter_modules(package.__path__)
            if _STEP_NAME.match(info.name)
        ]
    except ModuleNotFoundError:
        # a plain checkout on sys.path with no install: the steps sit beside the package;
        # register that folder as handoff_files.migrations, then import as an install would
        folder = Path(__file__).resolve().parents[2] / "migrations"
        spec = importlib.util.spec_from_file_location(
            "handoff_files.migrations", folder / "__init__.py", submodule_search_locations=[str(folder)]
        )
        if spec is None or spec.loader is None:
            return []
        package = importlib.util.module_from_spec(spec)
        sys.modules["handoff_files.migrations"] = package
        spec.loader.exec_module(package)
        return [
            importlib.import_module(f"handoff_files.migrations.{path.stem}")
            for path in sorted(folder.glob("v*_to_v*.py"))
            if _STEP_NAME.match(path.stem)
        ]


@cache
def steps() -> dict[str, Step]:
    """The migration steps by source version (loaded once)."""
    found = {}
    for module in _step_modules():
        step = Step(module.SOURCE, module.TARGET, module.upgrade, module.__name__.rsplit(".", 1)[-1])
        found[step.source] = step
    return found


def check_version(document: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    """Return the document's ``schema_version`` if this library reads it.

    :raises UnsupportedVersionError: missing, not a string, newer than the newest known, or unknown.
    """
    if "schema_version" not in document:
        msg = (
            f"no schema_version: refusing to guess the format (this library reads {', '.join(KNOWN_VERSIONS)}); "
            "if you know it, say so with --assume-version"
        )
        raise UnsupportedVersionError(path, msg)
    version = document["schema_version"]
    if not isinstance(version, str):
        found = f"{json.dumps(version)} ({type(version).__name__})"
        msg = f"schema_version must be a string such as {SCHEMA_VERSION!r}, found {found}"
        raise UnsupportedVersionError(path, msg)
    if version in KNOWN_VERSIONS:
        return version
    if _newer(version, KNOWN_VERSIONS[-1]):
        msg = (
            f"schema_version {version!r} is newer than {KNOWN_VERSIONS[-1]!r}, the newest this library reads; "
            "upgrade handoff-files"
        )
    else:
        msg = f"schema_version {version!r} is not one this library reads ({', '.join(KNOWN_VERSIONS)})"
    raise UnsupportedVersionError(path, msg)


def _newer(version: str, than: str) -> bool:
    def key(text: str) -> tuple[int, ...]:
        parts = [int(part) for part in text.split(".")]
        while len(parts) > 1 and parts[-1] == 0:  # "2.0.0" is "2.0"
            parts.pop()
        return tuple(parts)

    try:
        return key(version) > key(than)
    except ValueError:
        return False


def legacy_checksum(state: Any) -> str:
    """The 0.8/1.0 checksum: 16 hex digits of sha256 over ``json.dumps(state, sort_keys=True)``, UTF-8."""
    return hashlib.sha256(json.dumps(state, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def verify_legacy_checksum(document: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """Check a 0.8/1.0 document's checksum over its ``state``, as those writers defined it.

    :raises ChecksumMismatchError: missing, malformed or not matching: the file is corrupt.
    """
    version = document.get("schema_version")
    expected = document.get("checksum")
    if not isinstance(expected, str) or not re.fullmatch(r"[0-9a-f]{16}", expected):
        msg = f"{version} handoff has no valid checksum (16 hex digits over state), found {expected!r}"
        raise ChecksumMismatchError(path, msg)
    if "state" not in document:
        msg = f"{version} handoff has no state for its checksum to cover"
        raise ChecksumMismatchError(path, msg)
    actual = legacy_checksum(document["state"])
    if not hmac.compare_digest(actual, expected):
        msg = f"state does not match its {version} checksum ({expected} recorded, {actual} computed): corrupt"
        raise ChecksumMismatchError(path, msg)


def migrate_document(
    document: Mapping[str, Any], path: str | os.PathLike[str], *, assumed: bool = False
) -> dict[str, Any]:
    """Run the chain from the document's version to the current one, in memory.

    The result records ``lineage.migrated_from``: the original version, its checksum, and a note
    for every assumption a step made. A document of a version the model holds as it is
    (:data:`~handoff_files.format.model.NATIVE_VERSIONS`: 2.0 and 2.1) is returned as a copy, unchanged.

    :param assumed: the version was not in the file but stated by a person (recorded in the notes).
    :raises HandoffMigrationError: if a step is missing or fails on this document.
    """
    original = str(document.get("schema_version"))
    if original in NATIVE_VERSIONS:  # read as it stands: its seal covers its own version
        return dict(document)
    current: dict[Any, Any] = dict(document)
    version = original
    chain = steps()
    while version != SCHEMA_VERSION:
        step = chain.get(version)
        if step is None:
            msg = f"no migration step from {version!r} (steps found: {', '.join(sorted(chain)) or 'none'})"
            raise HandoffMigrationError(path, msg)
        try:
            current = step.upgrade(current)
        except Exception as exc:
            # a step refuses what it cannot read faithfully (TypeError, ValueError); anything
            # else it raises on an odd document is this file's migration error all the same
            msg = f"cannot migrate this {original} document ({step.name}): {exc}"
            raise HandoffMigrationError(path, msg) from exc
        version = step.target
    notes = current.pop(NOTES, [])
    if assumed:
        notes.insert(0, f"the file had no schema_version; read as {original} because a person said so")
    checksum = document.get("checksum")
    current["lineage"] = {
        "adopted_from": None,
        "migrated_from": {
            "schema_version": original,
            "checksum": f"sha256-16:{checksum}" if isinstance(checksum, str) else None,
            "notes": notes,
        },
    }
    return current
