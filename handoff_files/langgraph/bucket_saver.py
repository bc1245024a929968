"""``HandoffSaver("s3://bucket/prefix")``: LangGraph's checkpointer on object storage (issue 23).

Each checkpoint is one sealed JSON object a person can read (the same record a folder's checkpoint
file holds in its ``state.data.langgraph``, its values readable JSON where they read back equal), and
each pending write one too (:mod:`~handoff_files.langgraph.bucket_keys` names them). It stands on the
storage seam: an object is created only if absent (``If-None-Match: *``), and the ones LangGraph
replaces (a special channel's write, a checkpoint put again under its id) only if still at the
ETag read (``If-Match``). A write's regular channel keeps the first value written, as LangGraph's
own savers do. Every object read is bounded, its seal and its place (thread, namespace, id) checked,
and its typed values read only if every type they name is allowed, as on a folder: reading a
checkpoint never imports or calls anything else.

What a folder's saver has and this one has not: a handoff thread per namespace (``handoff show``
reads a folder's), the journal-first commit (a bucket acknowledges a ``PUT`` once it holds it),
blobs for large values (an object holds up to 16 MiB), and an atomic ``delete_thread`` /
``copy_thread`` (objects go, or come, one by one; readers never see a checkpoint half written).
"""

from __future__ import annotations

import builtins
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from handoff_files.format import seal as sealing
from handoff_files.format.codec import MAX_FILE_BYTES, parse_json
from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffValidationError,
    ObjectChangedError,
    ObjectExistsError,
    StorageUnavailableError,
)
from handoff_files.langgraph import bucket_threads, bucket_writes, threads
from handoff_files.langgraph.allowed import SAFE_TYPES, TypeKey, type_keys
from handoff_files.langgraph.bucket_keys import (
    KIND,
    Found,
    check_shape,
    checked_size,
    checkpoint_key,
    encode_name,
    parse_key,
    sealed,
    thread_prefix,
)
from handoff_files.langgraph.bucket_values import stash_value, unstash_value, values_prefix
from handoff_files.langgraph.saver import HandoffSaver
from handoff_files.langgraph.threads import DELTA_KEY, DamagedCheckpointWarning
from handoff_files.thread.settings import DURABILITIES

if TYPE_CHECKING:
    from handoff_files.storage import Storage

__all__ = ["BucketSaver"]

_REPLACE_TRIES: Final = 8


class BucketSaver(HandoffSaver):
    """What ``HandoffSaver("s3://bucket/prefix")`` makes: the saver's API on object storage.

    Takes the saver's keywords; ``durability`` is checked and moot (an object is durable once the store
    acknowledges it); ``layers`` is unused (no handoff thread here); ``signing_key`` given is refused
    (checkpoints on a bucket are sealed, not signed: a configured key is not used).
    ``keep`` keeps the newest checkpoints per thread and namespace after each ``put``.
    """

    def __init__(
        self,
        root: str,
        *,
        durability: Any = "journal",
        keep: int | None = None,
        serde: Any = None,
        allowed_types: Iterable[type | tuple[str, str]] = (),
        layers: Mapping[str, str] | None = None,
        signing_key: Any = None,
    ) -> None:
        from handoff_files.storage import open_storage  # noqa: PLC0415 -- obstore only for a bucket

        self.storage: Storage = open_storage(root)
        where = self.storage.where
        extra = type_keys(allowed_types, where)
        self.allowed_types: frozenset[TypeKey] = SAFE_TYPES | extra
        strict = JsonPlusSerializer(allowed_msgpack_modules=tuple(extra) or None)
        BaseCheckpointSaver.__init__(self, serde=strict if serde is None else serde)
        self.opaque = serde is not None and type(serde) is not JsonPlusSerializer
        if durability not in DURABILITIES:
            msg = f"durability must be one of {', '.join(map(repr, DURABILITIES))}, not {durability!r}"
            raise HandoffError(where, msg)
        if signing_key not in (None, False):
            msg = "signing checkpoints is a folder's saver's (not on object storage yet): leave out signing_key"
            raise HandoffValidationError(where, msg)
        self.durability = durability
        self.keep = threads.check_keep(keep, where)
        self.layers = dict(layers or {})

    def __repr__(self) -> str:
        return f"HandoffSaver({self.where!r})"

    @property
    def where(self) -> str:
        """The saver's root as a person names it: ``s3://bucket/prefix``."""
        return self.storage.where

    # -- reading -----------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint *config* names, or its thread and namespace's newest; None if there is none.

        :raises HandoffError: if the one named (or the newest) does not verify, naming its object.
        :raises StorageUnavailableError: if the store does not answer.
        """
        configurable = config.get("configurable", {})
        thread, ns = self.parts(configurable["thread_id"], configurable.get("checkpoint_ns", ""))
        wanted = get_checkpoint_id(config)
        if wanted:
            key = checkpoint_key(thread, ns, encode_name(str(wanted), "checkpoint_id", self.where))
            try:
                return self._tuple(self.read_object(key), key)
            except HandoffNotFoundError:
                return None
        found = self.checkpoints(thread_prefix(thread, ns))
        for item in found:  # newest first; one deleted since the listing: the next
            try:
                return self._tuple(self.read_object(item.key), item.key)
            except HandoffNotFoundError:
                continue
        return None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 -- LangGraph's own parameter name
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """The checkpoints (of a thread, of one namespace if *config* names it), newest first.

        A checkpoint object that does not verify is passed over with a :class:`DamagedCheckpointWarning`.
        """
        configurable = (config or {}).get("configurable", {})
        prefix = ""
        if "thread_id" in configurable:
            ns = configurable.get("checkpoint_ns")
            thread, ns_part = self.parts(configurable["thread_id"], "" if ns is None else ns)
            prefix = thread_prefix(thread, None if ns is None else ns_part)
        wanted = get_checkpoint_id(config) if config else None
        below = get_checkpoint_id(before) if before else None
        count = 0
        for item in self.checkpoints(prefix):
            if limit is not None and count >= limit:
                return
            if (wanted and item.checkpoint_id != wanted) or (below and item.checkpoint_id >= below):
                continue
            try:
                record = self.read_object(item.key)
            except HandoffNotFoundError:
                continue  # removed by another writer since the listing
            except StorageUnavailableError:
                raise
            except HandoffError as exc:
                warnings.warn(f"{exc}: passed over", DamagedCheckpointWarning, stacklevel=2)
                continue
            try:
                if filter and not _matches(self._metadata(record, item.key), filter):
                    continue
                found = self._tuple(record, item.key)
            except StorageUnavailableError:
                raise
            except HandoffError as exc:  # a value not allowed, a damaged write: named, and the history goes on
                warnings.warn(f"{exc}: passed over", DamagedCheckpointWarning, stacklevel=2)
                continue
            count += 1
            yield found

    def _tuple(self, record: dict[str, Any], key: str) -> CheckpointTuple:
        named = f"{self.where}/{key}"
        checkpoint = self._decode(record["checkpoint"], named)
        if not isinstance(checkpoint, dict) or not isinstance(checkpoint.get("channel_versions", {}), dict):
            raise HandoffError(named, "its checkpoint is not a checkpoint (not a mapping of LangGraph's fields)")
        values = record.get("channel_values", {})
        thread, ns = self.parts(record["thread_id"], record["checkpoint_ns"])
        large = values_prefix(thread, ns, encode_name(record["checkpoint_id"], "checkpoint_id", self.where))
        checkpoint["channel_values"] = {
            name: self._decode(unstash_value(self.storage, large, values[name], named), named)
            for name in checkpoint.get("channel_versions", {})
            if name in values
        }
        ids = {"thread_id": record["thread_id"], "checkpoint_ns": record["checkpoint_ns"]}
        config: RunnableConfig = {"configurable": {**ids, "checkpoint_id": record["checkpoint_id"]}}
        parent_id = record.get("parent_checkpoint_id")
        parent: RunnableConfig | None = (
            None if parent_id is None else {"configurable": {**ids, "checkpoint_id": parent_id}}
        )
        metadata = cast("CheckpointMetadata", self._metadata(record, key))
        writes = bucket_writes.pending_writes(self, record)
        return CheckpointTuple(config, cast("Checkpoint", checkpoint), metadata, parent, writes)

    def metadata_at(self, item: Found) -> dict[str, Any]:
        """The metadata of the checkpoint *item* lists, decoded.

        :raises HandoffNotFoundError: if it is gone. :raises HandoffError: if it does not verify.
        """
        return self._metadata(self.read_object(item.key), item.key)

    def _metadata(self, record: dict[str, Any], key: str) -> dict[str, Any]:
        named = f"{self.where}/{key}"
        metadata = self._decode(record["metadata"], named)
        if not isinstance(metadata, dict):
            raise HandoffError(named, f"its metadata is a {type(metadata).__name__}, not a mapping")
        return metadata

    def checkpoints(self, prefix: str) -> builtins.list[Found]:
        """The checkpoint objects under *prefix*, newest first (by id, then namespace and thread)."""
        found = [item for key in self.storage.list(prefix) if (item := parse_key(key)) and not item.write]
        return sorted(found, key=lambda f: (f.checkpoint_id, f.checkpoint_ns, f.thread_id), reverse=True)

    def read_object(self, key: str, *, kind: str = KIND) -> dict[str, Any]:
        """The sealed object at *key*, checked: its seal, its kind, and that it is where its fields say.

        :raises HandoffNotFoundError: if it is gone. :raises HandoffError: if it does not verify.
        """
        named = f"{self.where}/{key}"
        document = parse_json(self.storage.read(key, limit=MAX_FILE_BYTES).data, named, limit=MAX_FILE_BYTES)
        if not isinstance(document, dict) or document.get("kind") != kind:
            raise HandoffError(named, f"not a {kind} object written by this saver")
        seal = document.pop("seal", None)
        digest = seal.get("digest") if isinstance(seal, dict) else None
        algorithm = seal.get("algorithm") if isinstance(seal, dict) else None
        try:
            matched = isinstance(digest, str) and sealing.matches(sealing.canonical(document), str(algorithm), digest)
        except ValueError:
            matched = False
        if not matched:
            raise HandoffError(named, "content does not match its seal: damaged or edited since it was written")
        found = parse_key(key)
        fields = (document.get("thread_id"), document.get("checkpoint_ns"), document.get("checkpoint_id"))
        if found is None or fields != (found.thread_id, found.checkpoint_ns, found.checkpoint_id):
            raise HandoffError(named, "holds another thread's or checkpoint's record than its key names (copied?)")
        check_shape(document, kind, named)
        return document

    # -- writing -----------------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store *checkpoint* as its own sealed object; return its config (after ``keep``'s pruning)."""
        configurable = config["configurable"]
        thread_id, checkpoint_ns = str(configurable["thread_id"]), configurable.get("checkpoint_ns", "")
        full = get_checkpoint_metadata(config, metadata)
        if self.keep is not None and isinstance(full, dict) and full.get(DELTA_KEY):
            msg = (
                f"keep={self.keep}: this graph uses a DeltaChannel, whose value is rebuilt from the writes of older "
                "checkpoints, which keep would delete (its value would silently read as empty); use keep=None"
            )
            raise HandoffValidationError(self.where, msg)
        self.put_record(thread_id, checkpoint_ns, dict(checkpoint), full, configurable.get("checkpoint_id"))
        if self.keep is not None:
            bucket_threads.keep_newest(self, thread_id, checkpoint_ns, self.keep, upto=checkpoint["id"])
        return {
            "configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint["id"]}
        }

    def put_record(
        self, thread_id: str, checkpoint_ns: str, checkpoint: dict[str, Any], metadata: Any, parent: str | None
    ) -> None:
        """Write one checkpoint's object (created; replaced if LangGraph puts the same id again)."""
        thread, ns = self.parts(thread_id, checkpoint_ns)
        values = checkpoint.pop("channel_values", None) or {}
        versions = checkpoint.get("channel_versions", {})
        where = f"{self.where}/{thread_prefix(thread, ns)}"
        part = encode_name(str(checkpoint["id"]), "checkpoint_id", self.where)
        large = values_prefix(thread, ns, part)
        record = {
            "kind": KIND,
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint["id"],
            "parent_checkpoint_id": parent,
            "metadata": self._encode(metadata, where),
            "checkpoint": self._encode(checkpoint, where),
            "channel_values": {
                name: stash_value(self.storage, large, self._encode(v, where))
                for name, v in values.items()
                if name in versions
            },
        }
        key = checkpoint_key(thread, ns, part)
        self._put(key, checked_size(sealed(record), f"{self.where}/{key}"), replace=True)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes, all of one call at once (:func:`.bucket_writes.store_writes`)."""
        bucket_writes.store_writes(self, config, writes, task_id, task_path)

    def _put(self, key: str, data: bytes, *, replace: bool) -> None:
        """Create *key*; if it exists, leave it (*replace* False) or replace it at the ETag read (a few tries)."""
        for _ in range(_REPLACE_TRIES):
            try:
                self.storage.create(key, data)
                return
            except ObjectExistsError:
                if not replace:
                    return
            try:
                self.storage.replace(key, data, self.storage.read(key, limit=MAX_FILE_BYTES).etag)
                return
            except (ObjectChangedError, HandoffNotFoundError):
                continue  # another writer changed or removed it in between: try again
        named, msg = f"{self.where}/{key}", f"other writers changed it {_REPLACE_TRIES} times while it was written"
        raise ObjectChangedError(named, msg)

    # -- removing and copying (bucket_threads.py) ------------------------------------------------

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of a thread (oldest first: a reader meanwhile sees its newest)."""
        bucket_threads.delete_thread(self, str(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete every checkpoint (and its writes) whose metadata's ``run_id`` is one of *run_ids*."""
        bucket_threads.delete_for_runs(self, run_ids)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest``: keep each namespace's newest checkpoint (and its writes); ``delete``: delete the threads."""
        for thread_id in threads.pruned(thread_ids, strategy, self.delete_thread):
            bucket_threads.keep_latest(self, thread_id)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint of a thread, with its id, metadata, values and writes, to a new thread.

        Writes first, then checkpoints oldest first, so a reader of the target never meets a checkpoint
        without its writes; on a failure what was copied is removed again.

        :raises HandoffError: if the target thread already holds checkpoints (nothing is written then).
        """
        bucket_threads.copy_thread(self, str(source_thread_id), str(target_thread_id))

    # -- names ---------------------------------------------------------------------------------

    def parts(self, thread_id: object, checkpoint_ns: object) -> tuple[str, str]:
        """A thread id and a namespace as the parts of their keys (see :mod:`.bucket_keys`)."""
        return (
            encode_name(str(thread_id), "thread_id", self.where),
            encode_name(checkpoint_ns, "checkpoint_ns", self.where),  # type: ignore[arg-type]
        )


def _matches(metadata: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """Whether *metadata* holds every key of *wanted* (``list``'s filter) with its value."""
    return all(key in metadata and metadata[key] == value for key, value in wanted.items())
