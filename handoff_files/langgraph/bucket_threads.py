"""Removing and copying checkpoints on object storage: the bucket saver's ``delete_thread``, ``delete_for_runs``,
``prune`` and ``copy_thread`` (objects go, or come, one by one: a bucket has no rename of a folder)."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffValidationError,
    StorageUnavailableError,
)
from handoff_files.langgraph.blobs import MAX_BLOB_BYTES
from handoff_files.langgraph.bucket_keys import WRITE_KIND, Found, encode_name, sealed, thread_prefix, writes_prefix
from handoff_files.langgraph.bucket_values import values_prefix
from handoff_files.langgraph.threads import DELTA_KEY, DamagedCheckpointWarning

if TYPE_CHECKING:
    from handoff_files.storage import Storage

__all__ = ["copy_thread", "delete_for_runs", "delete_thread", "keep_latest", "keep_newest", "refuse_delta", "remove"]


class BucketSaver(Protocol):
    """What these functions ask of the bucket saver (:class:`~handoff_files.langgraph.bucket_saver.BucketSaver`)."""

    @property
    def where(self) -> str: ...
    @property
    def storage(self) -> Storage: ...
    def checkpoints(self, prefix: str) -> list[Found]: ...
    def metadata_at(self, item: Found) -> Any: ...
    def parts(self, thread_id: object, checkpoint_ns: object) -> tuple[str, str]: ...
    def read_object(self, key: str, *, kind: str = ...) -> dict[str, Any]: ...


_DELTA = (
    "this graph uses a DeltaChannel, whose value is rebuilt from the writes of older checkpoints: "
    "pruning them would silently empty it; keep every checkpoint (keep=None) or delete the thread"
)


def delete_thread(saver: BucketSaver, thread_id: str) -> None:
    """Remove every checkpoint of the thread, oldest first, with its writes; then anything left under it."""
    thread = encode_name(thread_id, "thread_id", saver.where)
    remove(saver, saver.checkpoints(thread_prefix(thread))[::-1])
    for key in saver.storage.list(thread_prefix(thread)):
        saver.storage.remove(key)


def delete_for_runs(saver: BucketSaver, run_ids: Sequence[str]) -> None:
    """Remove every checkpoint (and its writes) whose metadata's ``run_id`` is one of *run_ids*; one that does
    not verify is passed over with a :class:`DamagedCheckpointWarning` (its run cannot be known)."""
    runs = set(run_ids)
    if not runs:
        return
    doomed = []
    for item in saver.checkpoints(""):
        with _damaged(), _gone():
            if saver.metadata_at(item).get("run_id") in runs:
                doomed.append(item)
    remove(saver, doomed)


def keep_latest(saver: BucketSaver, thread_id: str) -> None:
    """Keep each namespace's newest checkpoint (and its writes)."""
    thread = encode_name(thread_id, "thread_id", saver.where)
    for checkpoint_ns in {item.checkpoint_ns for item in saver.checkpoints(thread_prefix(thread))}:
        keep_newest(saver, thread_id, checkpoint_ns, 1)


def keep_newest(saver: BucketSaver, thread_id: str, checkpoint_ns: str, keep: int, *, upto: str | None = None) -> None:
    """Remove all but the *keep* newest checkpoints of a namespace (of those up to checkpoint *upto*, when
    given: a put counts from its own, so an object named newer is never why it is removed), oldest first.
    One past *keep* that does not verify goes with the others, as on a folder.

    :raises HandoffValidationError: if the graph uses a DeltaChannel (its value needs the older writes).
    """
    thread, ns = saver.parts(thread_id, checkpoint_ns)
    listed = saver.checkpoints(thread_prefix(thread, ns))
    older = [item for item in listed if upto is None or item.checkpoint_id <= upto][keep:]
    refuse_delta(saver, older)
    remove(saver, older[::-1])


def refuse_delta(saver: BucketSaver, older: Sequence[Found]) -> None:
    """Refuse to remove *older* (checkpoints of one namespace) if the graph uses a DeltaChannel.

    :raises HandoffValidationError: if one of them says so (its value needs the older writes).
    """
    for item in older:
        try:
            metadata = saver.metadata_at(item)
        except HandoffNotFoundError:
            continue
        except StorageUnavailableError:
            raise
        except HandoffError:
            continue  # damaged, and past keep: removed with the rest
        if metadata.get(DELTA_KEY):
            thread, ns = saver.parts(item.thread_id, item.checkpoint_ns)
            where = f"{saver.where}/{thread_prefix(thread, ns)}"
            raise HandoffValidationError(where, _DELTA)


def remove(saver: BucketSaver, items: Sequence[Found]) -> None:
    """Remove each checkpoint object, then its writes and its large values."""
    for item in items:
        saver.storage.remove(item.key)
        for key in [*saver.storage.list(_writes_of(saver, item)), *saver.storage.list(_values_of(saver, item))]:
            saver.storage.remove(key)


def copy_thread(saver: BucketSaver, source_thread_id: str, target_thread_id: str) -> None:
    """Copy each checkpoint of the source, oldest first, its writes before it; on a failure, what was copied
    is removed again. One that does not verify is passed over with a :class:`DamagedCheckpointWarning`.

    :raises HandoffError: if anything is under the target thread already (nothing is written then).
    """
    target = encode_name(target_thread_id, "target_thread_id", saver.where)
    if saver.storage.list(thread_prefix(target)):
        where = f"{saver.where}/{thread_prefix(target)}"
        raise HandoffError(where, "the target thread already holds checkpoints or writes; copy into a new thread")
    source = encode_name(source_thread_id, "thread_id", saver.where)
    made: list[str] = []
    try:
        for item in saver.checkpoints(thread_prefix(source))[::-1]:
            _copy_one(saver, item, target, target_thread_id, made)
    except BaseException:
        for key in made[::-1]:
            with _gone():
                saver.storage.remove(key)
        raise


def _copy_one(saver: BucketSaver, item: Found, target: str, target_thread_id: str, made: list[str]) -> None:
    """Copy *item* and its writes under *target*, each key created added to *made* (one that does not verify,
    or is gone since the listing, is passed over; a write that fails is raised)."""
    objects: list[tuple[str, dict[str, Any]]] = []
    with _damaged(), _gone():
        record = saver.read_object(item.key)
        for key in saver.storage.list(_values_of(saver, item)):  # named by their digest: copied as they are
            with _gone():
                data = saver.storage.read(key, limit=MAX_BLOB_BYTES).data
                made.append(f"{target}/{key.split('/', 1)[1]}")
                saver.storage.create(made[-1], data)
        for key in saver.storage.list(_writes_of(saver, item)):
            with _damaged(), _gone():
                objects.append((key, saver.read_object(key, kind=WRITE_KIND)))
        objects.append((item.key, record))  # the checkpoint last: its writes are there when it shows
    for key, found in objects:
        made.append(f"{target}/{key.split('/', 1)[1]}")
        saver.storage.create(made[-1], sealed({**found, "thread_id": target_thread_id}))


def _values_of(saver: BucketSaver, item: Found) -> str:
    thread, ns = saver.parts(item.thread_id, item.checkpoint_ns)
    return values_prefix(thread, ns, encode_name(item.checkpoint_id, "checkpoint_id", saver.where))


def _writes_of(saver: BucketSaver, item: Found) -> str:
    thread, ns = saver.parts(item.thread_id, item.checkpoint_ns)
    return writes_prefix(thread, ns, encode_name(item.checkpoint_id, "checkpoint_id", saver.where))


@contextlib.contextmanager
def _gone() -> Iterator[None]:
    """Pass over an object another writer removed since the listing."""
    with contextlib.suppress(HandoffNotFoundError):
        yield


@contextlib.contextmanager
def _damaged() -> Iterator[None]:
    """Pass over an object that does not verify, saying so (a store that does not answer is raised)."""
    try:
        yield
    except StorageUnavailableError:
        raise
    except HandoffError as exc:
        warnings.warn(f"{exc}: passed over", DamagedCheckpointWarning, stacklevel=4)
