"""Export and adoption: a descriptor names a blob by sha256; adoption checks hash and seal before writing anything."""

from __future__ import annotations

import json
import subprocess
import zlib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from handoff_files import HandoffStore
from handoff_files.format.schema import render_schema
from handoff_files.foundation.errors import (
    BlobError,
    BlobIntegrityError,
    BlobNotFoundError,
    DescriptorError,
    HandoffError,
    HandoffParseError,
    TransferRefusedError,
)
from handoff_files.transfers.adopt import adopt_checkpoint
from handoff_files.transfers.blobs import LocalBlobStore, blob_path, sha256_hex
from handoff_files.transfers.descriptor import DESCRIPTOR_SCHEMA_FILE, Descriptor, descriptor_schema, parse_descriptor
from handoff_files.transfers.export import handoff_checkpoint


def _layers(step: int, pad: int = 0) -> dict[str, Any]:
    return {
        "state": {"active_tasks": [f"step {step}"], "data": {"step": step, "pad": "x" * pad}},
        "narrative": f"Did step {step}. Then more.",
        "decisions": [{"decision": f"chose {step}", "reason": "it was next"}],
        "priorities": [{"task": f"step {step + 1}", "urgency": "first"}],
        "warnings": [{"text": "mind the gap", "severity": "low"}],
        "context": {"conversation_history": [{"role": "user", "content": "go on"}]},
    }


@pytest.fixture
def source(tmp_path: Path) -> HandoffStore:
    """A thread with two sealed generations, the second large enough to be stored compressed."""
    store = HandoffStore(tmp_path / "alpha")
    store.save(_layers(1))
    store.save(_layers(2, 150_000))
    return store


@pytest.fixture
def blobs(tmp_path: Path) -> LocalBlobStore:
    """A local blob store both sides share (as a shared folder would be)."""
    return LocalBlobStore(tmp_path / "blobs")


def _five_layers(store: HandoffStore) -> dict[str, Any]:
    handoff = store.restore().handoff
    return handoff.content().model_dump(mode="json")


def _listing(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*")) if directory.exists() else []


def test_export_then_adopt_gives_the_same_five_layers_with_lineage(
    source: HandoffStore, blobs: LocalBlobStore, tmp_path: Path
) -> None:
    descriptor = handoff_checkpoint(source, blobs=blobs, to_agent="beta", summary="take over the port")
    result = adopt_checkpoint(descriptor, tmp_path / "beta-1", blobs=blobs)
    adopted = HandoffStore(tmp_path / "beta-1")
    assert _five_layers(adopted) == _five_layers(source)
    assert result.verified
    assert (result.adopted_from, result.new_thread_id, result.receipt.generation) == ("alpha:2", "beta-1", 1)
    lineage = adopted.restore().handoff.lineage.adopted_from
    assert lineage is not None
    assert (lineage.thread_id, lineage.generation, lineage.blob_sha256) == ("alpha", 2, descriptor.blob_sha256)
    assert descriptor.checkpoint_id == str(source.restore().handoff.seal)
    exported = [e for e in source.journal.entries()[0] if e.event == "exported"]
    assert exported
    assert exported[-1].extra["to_agent"] == "beta"
    assert [e.event for e in adopted.journal.entries()[0]] == ["document", "adopted"]  # a journal-first save


@pytest.mark.parametrize(
    "form",
    [
        pytest.param(lambda d: d, id="object"),
        pytest.param(lambda d: d.model_dump(mode="json"), id="dict"),
        pytest.param(lambda d: d.to_json(), id="JSON text"),
        pytest.param(lambda d: d.to_json().encode(), id="JSON bytes"),
    ],
)
def test_a_descriptor_is_accepted_as_object_dict_or_json(
    source: HandoffStore, blobs: LocalBlobStore, tmp_path: Path, form: Any
) -> None:
    descriptor = handoff_checkpoint(source, blobs=blobs, generation=1)
    result = adopt_checkpoint(form(descriptor), tmp_path / "beta-1", blobs=blobs)
    assert result.adopted_from == "alpha:1"


def test_round_trip_across_two_processes_and_two_directories(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    """One process saves and exports; another, with only the descriptor on stdin, adopts; a third restores."""
    exporter = (
        "import sys; from handoff_files import HandoffStore; from handoff_files.transfers.blobs import LocalBlobStore\n"
        "from handoff_files.transfers.export import handoff_checkpoint\n"
        "s = HandoffStore(sys.argv[1]); s.save({'state': {'data': {'k': 'v'}}, 'narrative': 'Half done.',"
        " 'decisions': [], 'priorities': [{'task': 'finish', 'urgency': 'first'}], 'warnings': []})\n"
        "print(handoff_checkpoint(s, blobs=LocalBlobStore(sys.argv[2]), to_agent='beta').to_json())\n"
    )
    adopter = (
        "import sys; from handoff_files.transfers.blobs import LocalBlobStore\n"
        "from handoff_files.transfers.adopt import adopt_checkpoint\n"
        "r = adopt_checkpoint(sys.stdin.read(), sys.argv[1], blobs=LocalBlobStore(sys.argv[2]))\n"
        "print(r.verified, r.new_thread_id)\n"
    )
    (tmp_path / "site-a").mkdir()
    (tmp_path / "site-b").mkdir()
    out = subprocess.run(
        [python, "-c", exporter, str(tmp_path / "site-a" / "alpha"), str(tmp_path / "blobs")],
        env=subprocess_env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    adopted = subprocess.run(
        [python, "-c", adopter, str(tmp_path / "site-b" / "beta"), str(tmp_path / "blobs")],
        input=out.stdout.strip(),
        env=subprocess_env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert adopted.stdout.split() == ["True", "beta"]
    assert _five_layers(HandoffStore(tmp_path / "site-b" / "beta")) == _five_layers(
        HandoffStore(tmp_path / "site-a" / "alpha")
    )


def _flip_stored_byte(blobs: LocalBlobStore, blob_id: str) -> None:
    [path] = list(blobs.root.glob(f"{blob_path(blob_id)}*"))
    data = bytearray(path.read_bytes())
    if path.suffix == ".zz":  # change the content, not the compression: recompress a changed payload
        raw = bytearray(zlib.decompress(bytes(data)))
        raw[len(raw) // 2] ^= 0x01
        path.write_bytes(zlib.compress(bytes(raw)))
    else:
        data[len(data) // 2] ^= 0x01
        path.write_bytes(bytes(data))


@pytest.mark.parametrize("generation", [pytest.param(1, id="raw blob"), pytest.param(2, id="compressed blob")])
def test_one_changed_blob_byte_is_refused_and_nothing_is_written(
    source: HandoffStore, blobs: LocalBlobStore, tmp_path: Path, generation: int
) -> None:
    descriptor = handoff_checkpoint(source, blobs=blobs, generation=generation)
    _flip_stored_byte(blobs, descriptor.blob_id)
    with pytest.raises(BlobIntegrityError, match="sha256 is"):
        adopt_checkpoint(descriptor, tmp_path / "beta-1", blobs=blobs)
    assert _listing(tmp_path / "beta-1") == []


def test_a_swapped_blob_is_refused(source: HandoffStore, blobs: LocalBlobStore, tmp_path: Path) -> None:
    first = handoff_checkpoint(source, blobs=blobs, generation=1)
    second = handoff_checkpoint(source, blobs=blobs, generation=2)
    # the store's file for generation 1 now holds generation 2's bytes: a valid, sealed, other blob
    (blobs.root / blob_path(first.blob_id)).write_bytes(blobs.get(second.blob_id))
    with pytest.raises(BlobIntegrityError):
        adopt_checkpoint(first, tmp_path / "beta-1", blobs=blobs)
    assert _listing(tmp_path / "beta-1") == []


def test_a_descriptor_with_another_hash_is_refused(source: HandoffStore, blobs: LocalBlobStore, tmp_path: Path) -> None:
    descriptor = handoff_checkpoint(source, blobs=blobs).model_dump(mode="json")
    descriptor["blob_sha256"] = sha256_hex(b"something else")
    with pytest.raises(BlobIntegrityError, match="the descriptor says"):
        adopt_checkpoint(descriptor, tmp_path / "beta-1", blobs=blobs)
    assert _listing(tmp_path / "beta-1") == []


def test_a_descriptor_naming_another_checkpoint_of_the_same_blob_is_refused(
    source: HandoffStore, blobs: LocalBlobStore, tmp_path: Path
) -> None:
    descriptor = handoff_checkpoint(source, blobs=blobs, generation=2).model_dump(mode="json")
    descriptor.update(generation=1, source="alpha:1")  # right blob and hash, wrong claim about what it holds
    with pytest.raises(BlobIntegrityError, match="not the checkpoint the descriptor names"):
        adopt_checkpoint(descriptor, tmp_path / "beta-1", blobs=blobs)
    assert _listing(tmp_path / "beta-1") == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(lambda d: d.pop("blob_sha256"), "has no blob_sha256", id="missing hash"),
        pytest.param(lambda d: d.update(blob_sha256=""), "has no blob_sha256", id="empty hash"),
        pytest.param(lambda d: d.update(descriptor_version="9.0"), "not one this library reads", id="unknown version"),
        pytest.param(lambda d: d.pop("descriptor_version"), "not one this library reads", id="no version"),
        pytest.param(lambda d: d.update(blob_sha256="ABC"), "not a valid descriptor", id="malformed hash"),
        pytest.param(lambda d: d.update(extra="x"), "not a valid descriptor", id="unknown key"),
        pytest.param(lambda d: d.update(source="beta:2"), "does not name thread", id="source disagrees"),
        pytest.param(lambda d: d.update(to_agent="../x"), "not a valid descriptor", id="bad agent id"),
    ],
)
def test_a_malformed_descriptor_is_refused_before_anything_is_fetched(
    source: HandoffStore, blobs: LocalBlobStore, tmp_path: Path, change: Any, message: str
) -> None:
    descriptor = handoff_checkpoint(source, blobs=blobs).model_dump(mode="json")
    change(descriptor)
    with pytest.raises(DescriptorError, match=message):
        adopt_checkpoint(descriptor, tmp_path / "beta-1", blobs=blobs)
    assert _listing(tmp_path / "beta-1") == []


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("{", id="not JSON"),
        pytest.param("[]", id="not an object"),
        pytest.param('{"descriptor_version": NaN}', id="NaN"),
        pytest.param("x" * 100_000, id="oversized"),
    ],
)
def test_descriptor_text_that_is_not_a_descriptor_is_refused(text: str) -> None:
    with pytest.raises(DescriptorError):
        parse_descriptor(text)


@pytest.mark.parametrize("as_bytes", [pytest.param(False, id="str"), pytest.param(True, id="bytes")])
def test_a_descriptor_with_a_duplicated_key_is_refused_by_the_strict_reader(
    source: HandoffStore, blobs: LocalBlobStore, tmp_path: Path, as_bytes: bool
) -> None:
    """The cross-agent boundary: a second ``blob_sha256`` must not quietly win over the first."""
    descriptor = handoff_checkpoint(source, blobs=blobs)
    text = descriptor.to_json()
    doubled = text[:-1] + f', "blob_sha256": "{"0" * 64}"}}'
    given: str | bytes = doubled.encode() if as_bytes else doubled
    with pytest.raises(DescriptorError, match="duplicate key 'blob_sha256'") as caught:
        parse_descriptor(given)
    assert isinstance(caught.value.__cause__, HandoffParseError)  # the one strict reader refused it
    with pytest.raises(DescriptorError, match="duplicate key"):
        adopt_checkpoint(given, tmp_path / "beta-1", blobs=blobs)
    assert _listing(tmp_path / "beta-1") == []
    assert parse_descriptor(text.encode() if as_bytes else text) == descriptor  # the same text, once, is fine


def test_a_target_that_already_has_handoffs_is_refused_and_left_untouched(
    source: HandoffStore, blobs: LocalBlobStore, tmp_path: Path
) -> None:
    target = HandoffStore(tmp_path / "beta-1")
    target.save(_layers(7))
    before = {p: p.read_bytes() for p in (tmp_path / "beta-1").rglob("*") if p.is_file() and p.name != ".lock"}
    descriptor = handoff_checkpoint(source, blobs=blobs)
    with pytest.raises(TransferRefusedError, match="already holds a thread"):
        adopt_checkpoint(descriptor, tmp_path / "beta-1", blobs=blobs)
    after = {p: p.read_bytes() for p in (tmp_path / "beta-1").rglob("*") if p.is_file() and p.name != ".lock"}
    assert after == before


@pytest.mark.parametrize(
    "leftover", [pytest.param("journal.jsonl", id="a journal"), pytest.param("state.json", id="a state.json")]
)
def test_a_target_holding_any_channel_is_refused(
    source: HandoffStore, blobs: LocalBlobStore, tmp_path: Path, leftover: str
) -> None:
    (tmp_path / "beta-1").mkdir()
    (tmp_path / "beta-1" / leftover).write_text("{}\n")
    with pytest.raises(TransferRefusedError):
        adopt_checkpoint(handoff_checkpoint(source, blobs=blobs), tmp_path / "beta-1", blobs=blobs)


_UNREACHABLE = "store unreachable"


class _BrokenStore:
    """A blob store whose backend fails, as a network store does: adoption must not take it as empty."""

    def put(self, data: bytes) -> str:
        raise ConnectionError(_UNREACHABLE)

    def get(self, blob_id: str) -> bytes:
        raise ConnectionError(_UNREACHABLE)

    def exists(self, blob_id: str) -> bool:
        raise ConnectionError(_UNREACHABLE)


def test_an_unreadable_blob_store_is_an_error_never_empty(
    source: HandoffStore, blobs: LocalBlobStore, tmp_path: Path
) -> None:
    descriptor = handoff_checkpoint(source, blobs=blobs)
    with pytest.raises(BlobError, match="ConnectionError: store unreachable"):
        adopt_checkpoint(descriptor, tmp_path / "beta-1", blobs=_BrokenStore())
    with pytest.raises(BlobError, match="failed to store"):
        handoff_checkpoint(source, blobs=_BrokenStore())
    assert _listing(tmp_path / "beta-1") == []


def test_a_missing_blob_is_refused(source: HandoffStore, blobs: LocalBlobStore, tmp_path: Path) -> None:
    descriptor = handoff_checkpoint(source, blobs=blobs)
    with pytest.raises(BlobNotFoundError):
        adopt_checkpoint(descriptor, tmp_path / "beta-1", blobs=LocalBlobStore(tmp_path / "other"))
    assert _listing(tmp_path / "beta-1") == []


def test_a_blob_that_is_not_a_handoff_is_refused(blobs: LocalBlobStore, tmp_path: Path) -> None:
    data = b'{"not": "a handoff"}'
    blob_id = blobs.put(data)
    descriptor = {
        "descriptor_version": "1.0",
        "source": "alpha:1",
        "agent_id": "alpha",
        "thread_id": "alpha",
        "generation": 1,
        "checkpoint_id": "blake3:" + "0" * 64,
        "blob_id": blob_id,
        "blob_sha256": sha256_hex(data),
        "created_at": "2026-01-01T00:00:00Z",
    }
    with pytest.raises(HandoffError):
        adopt_checkpoint(descriptor, tmp_path / "beta-1", blobs=blobs)
    assert _listing(tmp_path / "beta-1") == []


def test_blobs_are_content_addressed_compressed_past_the_threshold_and_idempotent(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "blobs", compress_over=1000)
    small, large = b"a" * 1000, b"b" * 1001
    assert store.put(small) == sha256_hex(small) == store.put(small)
    assert store.put(large) == sha256_hex(large)
    assert (store.root / blob_path(sha256_hex(small))).is_file()
    assert (store.root / f"{blob_path(sha256_hex(large))}.zz").is_file()
    assert store.get(sha256_hex(large)) == large
    assert store.exists(sha256_hex(small))
    assert not store.exists(sha256_hex(b"c"))


def test_a_decompression_bomb_stops_at_the_cap(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "blobs", max_bytes=1 << 20)
    bomb = b"\0" * (64 << 20)  # 64 MiB of zeros compress to about 64 KB
    blob_id = sha256_hex(bomb)
    target = store.root / f"{blob_path(blob_id)}.zz"
    target.parent.mkdir(parents=True)
    target.write_bytes(zlib.compress(bomb, 9))
    with pytest.raises(BlobError, match="inflates past the 1,048,576-byte cap"):
        store.get(blob_id)


@pytest.mark.parametrize("bad", ["../../etc/passwd", "A" * 64, "", "0" * 63])
def test_blob_ids_that_are_not_sha256_never_reach_a_path(tmp_path: Path, bad: str) -> None:
    with pytest.raises(BlobError, match="64 lowercase hex digits"):
        LocalBlobStore(tmp_path / "blobs").get(bad)


def test_an_unsealed_newest_generation_is_not_exported(tmp_path: Path, blobs: LocalBlobStore) -> None:
    store = HandoffStore(tmp_path / "alpha", durability="full")  # journal-first, its journal line would restore it
    store.save(_layers(1))
    (tmp_path / "alpha" / "handoff.json").unlink()
    for path in (tmp_path / "alpha" / "history").iterdir():
        path.unlink()
    with pytest.raises(TransferRefusedError, match="has no seal"):  # only the rebuilt state survives
        handoff_checkpoint(store, blobs=blobs)


def test_a_generation_only_its_journal_line_holds_is_exported_sealed(tmp_path: Path, blobs: LocalBlobStore) -> None:
    store = HandoffStore(tmp_path / "alpha")  # journal-first, the default: the line holds the whole generation
    receipt = store.save(_layers(1))
    (tmp_path / "alpha" / "handoff.json").unlink()
    for path in (tmp_path / "alpha" / "history").iterdir():
        path.unlink()
    descriptor = handoff_checkpoint(store, blobs=blobs)
    assert (descriptor.generation, descriptor.checkpoint_id) == (1, receipt.checksum)
    adopt_checkpoint(descriptor, tmp_path / "beta-1", blobs=blobs)
    assert _five_layers(HandoffStore(tmp_path / "beta-1")) == _five_layers(store)


def test_the_committed_descriptor_schema_matches_the_model_and_validates_a_descriptor(
    source: HandoffStore, blobs: LocalBlobStore
) -> None:
    assert DESCRIPTOR_SCHEMA_FILE.read_text(encoding="utf-8") == render_schema(descriptor_schema()), (
        "schemas/ is stale: run `python -m handoff_files.transfers.descriptor`"
    )
    descriptor = json.loads(handoff_checkpoint(source, blobs=blobs).to_json())
    jsonschema.validate(descriptor, json.loads(DESCRIPTOR_SCHEMA_FILE.read_text(encoding="utf-8")))
    assert isinstance(parse_descriptor(descriptor), Descriptor)


def test_a_store_root_that_is_a_file_is_an_error_not_absent(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(BlobError, match="cannot look for blob"):
        LocalBlobStore(tmp_path / "f").exists(sha256_hex(b"x"))
