"""Reading a checkpoint never runs code: its typed bytes may construct only the types allowed, else it is refused.

Each hostile checkpoint here is written and sealed by the saver itself (a serializer that emits the
hostile bytes), so its seal verifies: the refusal comes from the allow-list, not from a bad seal.
"""

from __future__ import annotations

import base64
import enum
from pathlib import Path
from typing import Any, Final

import orjson
import ormsgpack
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from handoff_files import HandoffError, HandoffValidationError, load
from handoff_files.format.seal import self_check
from handoff_files.langgraph import HandoffSaver
from handoff_files.langgraph.store import Namespace
from handoff_files.langgraph.values import decode_value, encode_value
from tests.langgraph.graph_app import build

THREAD: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


class Color(enum.Enum):
    """A type of the graph's own, as a state may hold."""

    RED = "red"


def _ext(code: int, *fields: Any) -> ormsgpack.Ext:
    return ormsgpack.Ext(code, ormsgpack.packb(fields))


def _hostile(name: str, marker: Path) -> tuple[str, bytes]:
    """The (kind, bytes) of one hostile value: each would create *marker* if the reader constructed what it names."""
    touch = f"touch {marker}"
    argv = ["touch", str(marker)]
    built: dict[str, tuple[str, bytes]] = {
        "os.system": ("msgpack", ormsgpack.packb(_ext(0, "os", "system", touch))),
        "subprocess.call with positional arguments": (
            "msgpack",
            ormsgpack.packb(_ext(1, "subprocess", "call", [argv])),
        ),
        "subprocess.run with keyword arguments": (
            "msgpack",
            ormsgpack.packb(_ext(2, "subprocess", "run", {"args": argv})),
        ),
        "subprocess.run as a pydantic model": (
            "msgpack",
            ormsgpack.packb(_ext(5, "subprocess", "run", {"args": argv}, "model_validate")),
        ),
        "os.system inside an allowed Decimal": (
            "msgpack",
            ormsgpack.packb({"safe": _ext(0, "decimal", "Decimal", _ext(0, "os", "system", touch))}),
        ),
        "a method call on os.system": ("msgpack", ormsgpack.packb(_ext(3, "os", "system", touch, "__call__"))),
        "an unknown extension type": ("msgpack", ormsgpack.packb(_ext(42, "os", "system", touch))),
        "a pickle": ("pickle", b"cos\nsystem\n(S'" + touch.encode() + b"'\ntR."),
        "a JSON lc constructor": (
            "json",
            b'{"lc": 2, "type": "constructor", "id": ["os", "system"], "args": ["' + touch.encode() + b'"]}',
        ),
    }
    return built[name]


HOSTILE: Final = [
    "os.system",
    "subprocess.call with positional arguments",
    "subprocess.run with keyword arguments",
    "subprocess.run as a pydantic model",
    "os.system inside an allowed Decimal",
    "a method call on os.system",
    "an unknown extension type",
    "a pickle",
    "a JSON lc constructor",
]


def _plant(root: Path, typed: tuple[str, bytes], where: str) -> Any:
    """A newest checkpoint whose value, metadata or pending write is the hostile bytes, sealed as the saver seals.

    An attacker who can write the folder can do the same: the seal detects damage, not tampering.
    """
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"narrative": "fine"}
    checkpoint["channel_versions"] = {"narrative": 1}
    HandoffSaver(root).put(THREAD, checkpoint, {}, {})
    thread = root / "t"
    record = dict(load(next((thread / "history").iterdir()), follow_symlinks=False).state.data["langgraph"])
    hostile = {"serde": typed[0], "base64": base64.b64encode(typed[1]).decode("ascii")}
    record["checkpoint_id"] = checkpoint["id"] + "-planted"  # sorts after the first: the newest
    record["parent_checkpoint_id"] = checkpoint["id"]
    if where == "value":
        record["channel_values"] = {"narrative": hostile}
    elif where == "metadata":
        record["metadata"] = hostile
    Namespace(thread, durability="full", keep=None).store.save({"state": {"data": {"langgraph": record}}})
    if where == "write":
        line: dict[str, Any] = {"task_id": "task", "task_path": "", "idx": 0, "channel": "narrative", "value": hostile}
        line["check"] = self_check(line)[:16]  # as the saver checks each line
        (thread / "writes").mkdir(exist_ok=True)
        (thread / "writes" / f"{record['checkpoint_id']}.jsonl").write_bytes(orjson.dumps(line) + b"\n")
    return {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": record["checkpoint_id"]}}


@pytest.mark.parametrize("where", ["value", "metadata", "write"])
@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_checkpoint_whose_bytes_would_run_code_is_refused_and_runs_nothing(
    tmp_path: Path, hostile: str, where: str
) -> None:
    marker = tmp_path / "marker"
    root = tmp_path / "graphs"
    config = _plant(root, _hostile(hostile, marker), where)
    saver = HandoffSaver(root)
    with pytest.raises(HandoffValidationError) as refused:
        saver.get_tuple(config)
    assert refused.value.path.startswith(str(root / "t")), "the error names the checkpoint's file"
    with pytest.raises(HandoffValidationError):
        list(saver.list(THREAD))
    with pytest.raises(HandoffValidationError):
        build(saver).get_state(THREAD)
    assert not marker.exists(), "reading ran the planted code"


def test_the_refusal_names_the_type_and_how_to_allow_it(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    root = tmp_path / "graphs"
    config = _plant(root, ("msgpack", ormsgpack.packb(_ext(0, "os", "system", f"touch {marker}"))), "value")
    with pytest.raises(HandoffValidationError, match=r"os\.system") as refused:
        HandoffSaver(root).get_tuple(config)
    assert "allowed_types=[YourClass]" in str(refused.value), "a function is never suggested for the list"
    assert "history/00000002.json" in str(refused.value), "the planted checkpoint's file"
    assert not marker.exists()


def test_a_type_of_the_graphs_own_round_trips_once_the_caller_allows_it(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"color": Color.RED}
    checkpoint["channel_versions"] = {"color": 1}
    with pytest.raises(HandoffValidationError, match=r"Color.*allowed_types=\[\('tests.*', 'Color'\)\]"):
        HandoffSaver(root).put(THREAD, checkpoint, {}, {})  # never written: it could not be read back
    config = HandoffSaver(root, allowed_types=[Color]).put(THREAD, checkpoint, {}, {})
    got = HandoffSaver(root, allowed_types=[(Color.__module__, "Color")]).get_tuple(config)
    assert got is not None
    assert got.checkpoint["channel_values"] == {"color": Color.RED}
    with pytest.raises(HandoffValidationError, match="Color"):
        HandoffSaver(root).get_tuple(config)


def test_langgraphs_own_allowlist_hook_extends_the_savers(tmp_path: Path) -> None:
    """LangGraph (with LANGGRAPH_STRICT_MSGPACK) hands the graph's schema types to ``with_allowlist``."""
    saver = HandoffSaver(tmp_path / "graphs")
    extended = saver.with_allowlist({(Color.__module__, "Color")})
    assert isinstance(extended, HandoffSaver)
    assert extended is not saver
    assert (Color.__module__, "Color") in extended.allowed_types
    assert (Color.__module__, "Color") not in saver.allowed_types
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"color": Color.RED}
    checkpoint["channel_versions"] = {"color": 1}
    got = extended.get_tuple(extended.put(THREAD, checkpoint, {}, {}))
    assert got is not None
    assert got.checkpoint["channel_values"] == {"color": Color.RED}


def test_a_value_the_serializer_would_pickle_is_never_written(tmp_path: Path) -> None:
    saver = HandoffSaver(tmp_path / "graphs", serde=JsonPlusSerializer(pickle_fallback=True))
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"kind": Color}  # a class: msgpack cannot hold it, pickle can
    checkpoint["channel_versions"] = {"kind": 1}
    with pytest.raises(HandoffError, match="pickle"):
        saver.put(THREAD, checkpoint, {}, {})


def test_langgraphs_safe_types_still_read_back(tmp_path: Path) -> None:
    import datetime as dt
    import decimal
    import uuid

    values = {
        "when": dt.datetime(2025, 1, 2, tzinfo=dt.UTC),
        "id": uuid.UUID(int=7),
        "money": decimal.Decimal("1.10"),
        "tags": {"a", "b"},
    }
    stored = {name: encode_value(value, JsonPlusSerializer()) for name, value in values.items()}
    assert all("base64" in item for item in stored.values())
    back = {name: decode_value(item, JsonPlusSerializer(), "here") for name, item in stored.items()}
    assert back == values


def test_decoding_checks_the_bytes_before_the_serializer_sees_them() -> None:
    """Even a permissive serializer of the caller's is never handed bytes that name a type not allowed."""
    hostile = ormsgpack.packb(_ext(0, "os", "system", "true"))
    stored = {"serde": "msgpack", "base64": base64.b64encode(hostile).decode()}
    with pytest.raises(HandoffValidationError, match=r"os\.system"):
        decode_value(stored, JsonPlusSerializer(allowed_msgpack_modules=True), "here")
