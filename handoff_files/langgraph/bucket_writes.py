"""A saver's pending writes on object storage: one sealed object per task and checkpoint, written whole.

``<thread>/<namespace>/writes/<checkpoint_id>/<task_id>.json`` holds every write of one task, so a
reader, and a run resumed after a kill, sees all of a ``put_writes`` call's writes or none: LangGraph
takes a task with pending writes as done, and a task with some of its writes would be replayed half
(a newcomer's run, killed mid-``put_writes``, resumed a step short). A second call for the task merges
into the object at the ETag read: a regular channel's first value is kept, a special channel's last.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import WRITES_IDX_MAP

from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.foundation.errors import HandoffNotFoundError, ObjectChangedError, ObjectExistsError
from handoff_files.langgraph.bucket_keys import WRITE_KIND, checked_size, encode_name, sealed, write_key, writes_prefix
from handoff_files.langgraph.bucket_values import stash_value, unstash_value, values_prefix

if TYPE_CHECKING:
    from handoff_files.storage import Storage

__all__ = ["pending_writes", "store_writes"]

_TRIES: Final = 8


class BucketSaver(Protocol):
    """What these functions ask of :class:`~handoff_files.langgraph.bucket_saver.BucketSaver`."""

    @property
    def where(self) -> str: ...
    @property
    def storage(self) -> Storage: ...
    def parts(self, thread_id: object, checkpoint_ns: object) -> tuple[str, str]: ...
    def read_object(self, key: str, *, kind: str = ...) -> dict[str, Any]: ...
    def _encode(self, value: Any, where: str) -> dict[str, Any]: ...
    def _decode(self, stored: Any, where: str) -> Any: ...


def store_writes(
    saver: BucketSaver, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str
) -> None:
    """Merge *writes* into the task's object (created, or replaced at the ETag read; a lost race read again).

    :raises ObjectChangedError: if other writers changed it every time.
    """
    configurable = config["configurable"]
    thread_id, checkpoint_ns = str(configurable["thread_id"]), configurable.get("checkpoint_ns", "")
    thread, ns = saver.parts(thread_id, checkpoint_ns)
    checkpoint = encode_name(str(configurable["checkpoint_id"]), "checkpoint_id", saver.where)
    key = write_key(thread, ns, checkpoint, encode_name(str(task_id), "task_id", saver.where))
    where = f"{saver.where}/{key}"
    large = values_prefix(thread, ns, checkpoint)
    fresh = {
        WRITES_IDX_MAP.get(channel, index): {
            "channel": channel,
            "value": stash_value(saver.storage, large, saver._encode(value, where)),
        }
        for index, (channel, value) in enumerate(writes)
    }
    for _ in range(_TRIES):
        try:
            stored = saver.storage.read(key, limit=MAX_FILE_BYTES)
        except HandoffNotFoundError:
            stored = None
        held = {} if stored is None else {w["idx"]: w for w in saver.read_object(key, kind=WRITE_KIND)["writes"]}
        added = {idx: {"idx": idx, **w} for idx, w in fresh.items() if idx < 0 or idx not in held}
        if not added:
            return  # every regular write is there already: the first is kept
        record = {
            "kind": WRITE_KIND,
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": str(configurable["checkpoint_id"]),
            "task_id": str(task_id),
            "task_path": task_path,
            "writes": sorted({**held, **added}.values(), key=lambda w: int(w["idx"])),
        }
        data = checked_size(sealed(record), where)
        try:
            if stored is None:
                saver.storage.create(key, data)
            else:
                saver.storage.replace(key, data, stored.etag)
        except (ObjectExistsError, ObjectChangedError):
            continue  # another call for this task wrote first: merge into its object
        return
    raise ObjectChangedError(where, f"other writers changed it {_TRIES} times while it was written")


def pending_writes(saver: BucketSaver, record: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """The pending writes of the checkpoint *record*, as LangGraph orders them (task path, task, idx).

    :raises HandoffError: if a write object does not verify, or holds a value not allowed (naming it).
    """
    thread, ns = saver.parts(record["thread_id"], record["checkpoint_ns"])
    checkpoint = encode_name(record["checkpoint_id"], "checkpoint_id", saver.where)
    prefix, large = writes_prefix(thread, ns, checkpoint), values_prefix(thread, ns, checkpoint)
    tasks = []
    for key in saver.storage.list(prefix):
        try:
            tasks.append(saver.read_object(key, kind=WRITE_KIND))
        except HandoffNotFoundError:
            continue
    writes = [(t["task_path"], t["task_id"], w) for t in tasks for w in t["writes"]]
    writes.sort(key=lambda found: (found[0], found[1], found[2]["idx"]))
    named = f"{saver.where}/{prefix}"
    return [
        (task, w["channel"], saver._decode(unstash_value(saver.storage, large, w["value"], named), named))
        for _, task, w in writes
    ]
