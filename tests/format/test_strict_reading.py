"""One corpus of bad JSON through every entry point: the same strict rules hold wherever bytes come in.

Each entry point is given a valid document of its own kind, damaged by one item of the corpus;
each must refuse it with its typed error, and the message must carry the strict reader's reason
(so a refusal for some other cause, such as an unknown key, does not count).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Final

import pytest

from handoff_files import (
    CapabilityError,
    DescriptorError,
    HandoffError,
    HandoffInbox,
    HandoffParseError,
    HandoffStore,
    LocalBlobStore,
    handoff_checkpoint,
    load,
    parse_descriptor,
)
from handoff_files.compat.sw4rm import HandoffContext, deserialize_context, serialize_context
from handoff_files.inbox.capabilities import AgentRegistry
from handoff_files.thread.journal import Journal
from handoff_files.thread.mirror import read_mirror
from handoff_files.transfers.handover import transferred_to

Damage = Callable[[bytes], bytes]
BOM: Final = b"\xef\xbb\xbf"


def _member(data: bytes) -> bytes:
    """The document's first member as JSON text (``"key": value``)."""
    key, value = next(iter(json.loads(data).items()))
    return json.dumps({key: value}, ensure_ascii=False)[1:-1].encode()


def _inject(member: bytes) -> Damage:
    """Put *member* first in the document's top-level object."""
    return lambda data: data.replace(b"{", b"{" + member + b",", 1)


def _duplicate_first(data: bytes) -> bytes:
    """The first member again, with the same value: a reader that keeps the last one sees no change."""
    return _inject(_member(data))(data)


#: (damage, a fragment the refusal names)
CORPUS: Final = [
    pytest.param(_duplicate_first, "duplicate key", id="duplicate-key"),
    pytest.param(_inject(b'"x": NaN'), "NaN", id="nan"),
    pytest.param(_inject(b'"x": -Infinity'), "Infinity", id="infinity"),
    pytest.param(_inject(b'"x": 18446744073709551616'), "64 bits", id="integer-past-64-bits"),
    pytest.param(_inject(b'"x": ' + b"[" * 70 + b"]" * 70), "nested deeper", id="too-deep"),
    pytest.param(_inject(b'"x": "\xff"'), "UTF-8", id="invalid-utf8"),
    pytest.param(_inject(b'"x": "\\ud800"'), "surrogate", id="lone-surrogate"),
    pytest.param(lambda data: BOM + data, "byte-order mark", id="bom"),
]

CONTENT: Final = {
    "narrative": "Ported half the importer.",
    "state": {"data": {"ported": 12}},
    "priorities": [{"task": "port the rest", "urgency": "first"}],
}


def _refused(error: type[BaseException], fragment: str, call: Callable[[], object]) -> BaseException:
    with pytest.raises(error) as caught:
        call()
    assert fragment in str(caught.value), caught.value
    return caught.value


def _damage_file(path: Path, damage: Damage) -> None:
    path.write_bytes(damage(path.read_bytes()))


@pytest.mark.parametrize(("damage", "fragment"), CORPUS)
def test_a_handoff_file(tmp_path: Path, damage: Damage, fragment: str) -> None:
    path = HandoffStore(tmp_path / "t").save(CONTENT).path
    _damage_file(path, damage)
    error = _refused(HandoffParseError, fragment, lambda: load(path))
    assert isinstance(error, HandoffError)
    assert error.path == str(path)


@pytest.mark.parametrize(("damage", "fragment"), CORPUS)
def test_state_json(tmp_path: Path, damage: Damage, fragment: str) -> None:
    store = HandoffStore(tmp_path / "t")
    store.save(CONTENT)
    _damage_file(store.mirror_path, damage)
    error = _refused(HandoffParseError, fragment, lambda: read_mirror(store.mirror_path))
    assert isinstance(error, HandoffError)
    assert error.path == str(store.mirror_path)


@pytest.mark.parametrize(("damage", "fragment"), CORPUS)
def test_a_journal_line_is_set_aside_as_damaged(tmp_path: Path, damage: Damage, fragment: str) -> None:
    """A journal line is not raised on: it is a damaged line, reported, and never taken as an event."""
    store = HandoffStore(tmp_path / "t")
    store.save(CONTENT)
    path = store.journal.path
    lines = path.read_bytes().splitlines(keepends=True)
    saved = [i for i, line in enumerate(lines) if b'"event":"saved"' in line]
    assert saved, lines
    lines[saved[-1]] = damage(lines[saved[-1]].rstrip(b"\n")) + b"\n"
    path.write_bytes(b"".join(lines))
    journal = Journal(store.path)
    _, problems = journal.check()
    assert [problem.kind for problem in problems] == ["damaged"], fragment
    entry, _ = journal.last("saved")
    assert entry is None


@pytest.mark.parametrize(("damage", "fragment"), CORPUS)
def test_a_descriptor(tmp_path: Path, damage: Damage, fragment: str) -> None:
    HandoffStore(tmp_path / "alpha").save(CONTENT)
    descriptor = handoff_checkpoint(tmp_path / "alpha", blobs=LocalBlobStore(tmp_path / "blobs"), to_agent="beta")
    data = damage(descriptor.to_json().encode())
    _refused(DescriptorError, fragment, lambda: parse_descriptor(data))
    if not data.startswith(BOM) and b"\xff" not in data:
        _refused(DescriptorError, fragment, lambda: parse_descriptor(data.decode()))


@pytest.mark.parametrize(("damage", "fragment"), CORPUS)
def test_an_inbox_request_file(tmp_path: Path, damage: Damage, fragment: str) -> None:
    inbox = HandoffInbox(tmp_path / "inbox")
    handoff_id = inbox.request_handoff("alpha", "beta", "needs SQL").handoff_id
    path = inbox.requests_dir / f"{handoff_id}.json"
    _damage_file(path, damage)
    error = _refused(HandoffParseError, fragment, lambda: inbox.get_handoff(handoff_id))
    assert isinstance(error, HandoffError)
    assert error.path == str(path)


@pytest.mark.parametrize(("damage", "fragment"), CORPUS)
def test_sw4rm_context_bytes(damage: Damage, fragment: str) -> None:
    """SW4RM's contract is a ValueError; its message carries the strict reader's reason."""
    context = HandoffContext([{"role": "user", "content": "hello"}], {"tool": "ok"}, {"k": 1})
    _refused(ValueError, fragment, lambda: deserialize_context(damage(serialize_context(context))))


@pytest.mark.parametrize(("damage", "fragment"), CORPUS)
def test_a_transfer_record(tmp_path: Path, damage: Damage, fragment: str) -> None:
    store = HandoffStore(tmp_path / "alpha")
    store.save(CONTENT)
    record = {"target": str(tmp_path / "beta"), "generation": 1}
    store.layout.transferred.write_bytes(damage(json.dumps(record, indent=2).encode()))
    _refused(HandoffParseError, fragment, lambda: transferred_to(store))


@pytest.mark.parametrize(("damage", "fragment"), CORPUS)
def test_a_capability_registry(tmp_path: Path, damage: Damage, fragment: str) -> None:
    path = tmp_path / "registry.json"
    path.write_bytes(damage(json.dumps({"agents": {"beta": {"capabilities": ["sql"]}}}, indent=2).encode()))
    _refused(CapabilityError, fragment, lambda: AgentRegistry.load(path))
