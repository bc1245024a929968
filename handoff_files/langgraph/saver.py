"""``HandoffSaver``: LangGraph's checkpointer on handoff threads, a sealed file a person can read per checkpoint."""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError, HandoffValidationError
from handoff_files.foundation.names import check_folder_path
from handoff_files.langgraph import threads
from handoff_files.langgraph.allowed import SAFE_TYPES, TypeKey, type_keys
from handoff_files.langgraph.async_methods import AsyncMethods
from handoff_files.langgraph.blobs import stash, unstash
from handoff_files.langgraph.checkpoint_file import CheckpointFile
from handoff_files.langgraph.folders import Folders
from handoff_files.langgraph.index import Entry
from handoff_files.langgraph.layout import (
    append_writes,
    name_writes,
    read_checkpoint_writes,
    writes_file,
    writes_files,
)
from handoff_files.langgraph.store import FORMAT, Namespace
from handoff_files.langgraph.threads import DELTA_KEY, passed_over
from handoff_files.langgraph.values import SerdeProtocol, decode_value, encode_value, layers_of_state
from handoff_files.thread.settings import DURABILITIES, Durability

if TYPE_CHECKING:
    from handoff_files.thread.signatures import KeyChoice

__all__ = ["LAYER_KEYS", "HandoffSaver"]

#: The graph-state keys read as the five layers, unless the saver is given its own mapping.
LAYER_KEYS: Final = {
    "narrative": "narrative",
    "decisions": "decisions",
    "priorities": "priorities",
    "warnings": "warnings",
}


class HandoffSaver(AsyncMethods, BaseCheckpointSaver[int]):
    """A LangGraph checkpointer whose checkpoints are sealed handoff files under *root*.

    Each thread is a handoff thread directory (``<root>/<thread id>/``, subgraph namespaces in
    ``namespaces/``); each checkpoint one durable, sealed generation of it, with its pending
    writes in ``writes/``. Channel values that are plain JSON, and LangChain messages, are stored
    as readable JSON; anything else as the serializer's typed bytes, which are read back only if
    every type they name is allowed (LangGraph's safe types and *allowed_types*): reading a
    checkpoint never imports or calls anything else. Every folder it writes into under *root* is a
    real folder: a symbolic link planted there is refused, never followed. Where the graph's state has
    the keys ``narrative``, ``decisions``, ``priorities`` and ``warnings`` (or those *layers* names),
    each checkpoint is also a five-layer handoff for ``handoff show``.

    :param root: the folder that holds the threads (created on the first save), or ``s3://bucket/prefix``
        (a :class:`~handoff_files.langgraph.bucket_saver.BucketSaver`, the same API on object storage).
    :param durability: ``"journal"`` (default): ``put`` returns once the journal line holding the
        checkpoint is flushed, one flush as SqliteSaver's WAL; a process's first read copies back
        a checkpoint a crash left only there. ``"full"``: once the checkpoint's own file is too.
    :param keep: the newest checkpoints kept per thread and namespace (their pending writes too),
        or None to keep every one.
    :param serde: LangGraph's serializer for what is not plain JSON (default: its own, in its
        strict allow-list mode). Any other serializer (``EncryptedSerializer``, a subclass of
        ``JsonPlusSerializer`` …) is given every value: the checkpoint's channels, its metadata and
        its pending writes are then written only as that serializer's bytes, never in clear, and no
        layer is read from the state. The saver checks the types plain msgpack names either way,
        and never stores or reads a pickle.
    :param allowed_types: the types of the graph's own (an ``Enum``, a dataclass, a pydantic model)
        that its state holds, as classes or ``(module, name)`` pairs: allowed besides LangGraph's
        safe types. LangGraph adds the graph's schema types itself when ``LANGGRAPH_STRICT_MSGPACK``
        is set (see :meth:`with_allowlist`).
    :param layers: layer name → state key, to read the five layers from other keys.
    :param signing_key: signs each checkpoint, as HandoffStore's (None: the configured key; False: none).
    :raises HandoffValidationError: for an *allowed_types* entry that is neither.
    """

    def __new__(cls, root: str | os.PathLike[str] | None = None, *args: Any, **kwargs: Any) -> HandoffSaver:
        if cls is HandoffSaver and isinstance(root, str) and "://" in root:  # a URL: object storage (S3:// told)
            from handoff_files.langgraph.bucket_saver import BucketSaver  # noqa: PLC0415 -- a bucket's saver only

            return super().__new__(BucketSaver)
        return super().__new__(cls)

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        durability: Durability = "journal",
        keep: int | None = None,
        serde: Any = None,
        allowed_types: Iterable[type | tuple[str, str]] = (),
        layers: Mapping[str, str] | None = None,
        signing_key: KeyChoice = None,
    ) -> None:  # allowed_types: the (module, name) of every type the saver's typed values may construct
        check_folder_path(root, "HandoffSaver")  # never a folder named s3:
        self.root = Path(root).absolute()
        extra = type_keys(allowed_types, str(self.root))
        self.allowed_types: frozenset[TypeKey] = SAFE_TYPES | extra
        # LangGraph's own allow-list mode too, so its reader refuses what the check here refuses
        strict = JsonPlusSerializer(allowed_msgpack_modules=tuple(extra) or None)
        super().__init__(serde=strict if serde is None else serde)
        #: every value through the caller's serializer, nothing in clear (see *serde*)
        self.opaque = serde is not None and type(serde) is not JsonPlusSerializer
        if durability not in DURABILITIES:
            msg = f"durability must be one of {', '.join(map(repr, DURABILITIES))}, not {durability!r}"
            raise HandoffError(self.root, msg)
        self.durability: Durability = durability
        self.keep = threads.check_keep(keep, self.root)
        self.layers = dict(LAYER_KEYS if layers is None else layers)
        #: the thread and namespace folders (shared by the copies :meth:`with_allowlist` makes)
        self.folders = Folders(self.root, durability=durability, keep=keep, signing_key=signing_key)

    def with_allowlist(self, extra_allowlist: Collection[tuple[str, ...]]) -> HandoffSaver:
        """A copy of the saver that also reads the types *extra_allowlist* names (LangGraph's hook).

        LangGraph calls it at ``compile()`` with the graph's schema types when
        ``LANGGRAPH_STRICT_MSGPACK`` is set; the copy shares the root and its caches.
        """
        extra = frozenset(tuple(key) for key in extra_allowlist)
        if extra <= self.allowed_types:
            return self
        clone = super().with_allowlist(extra_allowlist)
        copied = copy.copy(self) if clone is self else clone
        assert isinstance(copied, HandoffSaver)  # noqa: S101 -- the base class copies the saver itself
        copied.allowed_types = self.allowed_types | extra
        return copied

    # -- reading -----------------------------------------------------------------------------

    def _decode(self, stored: Any, where: Path | str) -> Any:
        serde: SerdeProtocol = self.serde
        return decode_value(stored, serde, str(where), allowed=self.allowed_types)

    def _encode(self, value: Any, where: Path | str) -> dict[str, Any]:
        serde: SerdeProtocol = self.serde
        return encode_value(value, serde, allowed=self.allowed_types, where=str(where), opaque=self.opaque)

    def tuple_of(self, namespace: Namespace, entry: Entry, found: CheckpointFile | None = None) -> CheckpointTuple:
        """The checkpoint *entry* names, read from its file (*found*, when already read)."""
        record = (namespace.checkpoint(entry) if found is None else found).record
        checkpoint = self._decode(record["checkpoint"], entry.path)
        versions = checkpoint.get("channel_versions", {})
        values = record.get("channel_values", {})
        checkpoint["channel_values"] = {
            name: self._decode(unstash(namespace.path, values[name], entry.path), entry.path)
            for name in versions
            if name in values
        }
        ids = {"thread_id": record["thread_id"], "checkpoint_ns": record["checkpoint_ns"]}
        config: RunnableConfig = {"configurable": {**ids, "checkpoint_id": entry.checkpoint_id}}
        parent: RunnableConfig | None = None
        if entry.parent_id is not None:
            parent = {"configurable": {**ids, "checkpoint_id": entry.parent_id}}
        metadata = self._decode(entry.metadata, entry.path)
        return CheckpointTuple(config, checkpoint, metadata, parent, self._pending(namespace.path, entry))

    def _pending(self, ns_dir: Path, entry: Entry) -> list[tuple[str, str, Any]]:
        path = writes_file(ns_dir, entry.checkpoint_id, entry.generation)
        chosen: dict[tuple[str, int], dict[str, Any]] = {}
        for record in read_checkpoint_writes(ns_dir, entry.checkpoint_id, entry.generation):
            key = (record["task_id"], record["idx"])
            if key not in chosen or record["idx"] < 0:  # first write wins; a special channel's last
                chosen[key] = record
        ordered = sorted(chosen.values(), key=lambda r: (r["task_path"], r["task_id"], r["idx"]))
        return [(r["task_id"], r["channel"], self._decode(unstash(ns_dir, r["value"], path), path)) for r in ordered]

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint *config* names (its ``checkpoint_id``), or the thread's newest; None if there is none.

        :raises HandoffError: if the checkpoint asked for may be in a file that does not verify
            (the newest, when none is named; any, when the one named is not among those that do).
        """
        configurable = config.get("configurable", {})
        ns_dir = self.folders.ns_dir(configurable["thread_id"], configurable.get("checkpoint_ns", ""))
        namespace = self.folders.ready(ns_dir)
        if namespace is None:
            return None
        wanted = get_checkpoint_id(config)
        if not wanted:
            newest = namespace.newest()  # one file, when its record proves it the newest
            if newest is not None:
                with contextlib.suppress(HandoffNotFoundError):  # pruned since: read the index below
                    return self.tuple_of(namespace, *newest)
        for attempt in range(3):  # a checkpoint another writer prunes between the look and the read: look again
            entries, damaged = namespace.scan()
            if wanted:
                entries = [entry for entry in entries if entry.checkpoint_id == wanted]
                if not entries and damaged:
                    raise damaged[0].error
            elif damaged and (not entries or damaged[0].generation > max(entry.generation for entry in entries)):
                raise damaged[0].error
            if not entries:
                return None
            try:
                return self.tuple_of(namespace, entries[0])
            except HandoffNotFoundError:
                if attempt == 2:
                    raise
        return None  # pragma: no cover -- the loop returns or raises

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 -- LangGraph's own parameter name
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """The checkpoints of a thread (one namespace if *config* names it), newest first."""
        configurable = (config or {}).get("configurable", {})
        if config is None or "thread_id" not in configurable:
            namespaces = [ns for folder in self.folders.thread_dirs() for ns in self.folders.namespaces_of(folder)]
        elif configurable.get("checkpoint_ns") is not None:
            ready = self.folders.ready(self.folders.ns_dir(configurable["thread_id"], configurable["checkpoint_ns"]))
            namespaces = [ready] if ready is not None else []
        else:
            namespaces = self.folders.namespaces_of(self.folders.thread_dir(configurable["thread_id"]))
        wanted = get_checkpoint_id(config) if config else None
        below = get_checkpoint_id(before) if before else None
        found = []
        for namespace in namespaces:
            entries, damaged = namespace.scan()
            passed_over(namespace, damaged)  # named in a warning, never a reason to stop the history
            found += [
                (namespace, entry)
                for entry in entries
                if (wanted is None or entry.checkpoint_id == wanted) and (below is None or entry.checkpoint_id < below)
            ]
        found.sort(key=lambda pair: pair[1].checkpoint_id, reverse=True)
        count = 0
        for namespace, entry in found:
            if limit is not None and count >= limit:
                return
            if filter:
                metadata = self.metadata_of(entry)
                if any(key not in metadata or metadata[key] != value for key, value in filter.items()):
                    continue
            try:
                item = self.tuple_of(namespace, entry)
            except HandoffNotFoundError:
                continue  # pruned by another writer since the listing
            count += 1
            yield item

    # -- writing -----------------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Save *checkpoint* as a sealed, durable generation of its thread; return its config."""
        configurable = config["configurable"]
        thread_id, checkpoint_ns = str(configurable["thread_id"]), configurable.get("checkpoint_ns", "")
        return self._save(
            thread_id,
            checkpoint_ns,
            dict(checkpoint),
            get_checkpoint_metadata(config, metadata),
            configurable.get("checkpoint_id"),
        )

    def metadata_of(self, entry: Entry) -> Any:
        """A checkpoint's metadata, decoded."""
        return self._decode(entry.metadata, entry.path)

    def _save(
        self, thread_id: str, checkpoint_ns: str, checkpoint: dict[str, Any], metadata: Any, parent: str | None
    ) -> RunnableConfig:
        if self.keep is not None and isinstance(metadata, dict) and metadata.get(DELTA_KEY):
            msg = (
                f"keep={self.keep}: this graph uses a DeltaChannel, whose value is rebuilt from the writes of older "
                "checkpoints, which keep would delete (its value would silently read as empty); use keep=None"
            )
            raise HandoffValidationError(self.root, msg)
        return self.save_into(self.folders, thread_id, checkpoint_ns, checkpoint, metadata=metadata, parent=parent)

    def save_into(
        self,
        folders: Folders,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint: dict[str, Any],
        *,
        metadata: Any,
        parent: str | None,
    ) -> RunnableConfig:
        """Save a checkpoint as the next generation of its namespace under *folders* (the saver's, or a staging one)."""
        ns_dir = folders.ns_dir(thread_id, checkpoint_ns)
        values = checkpoint.pop("channel_values", None) or {}
        versions = checkpoint.get("channel_versions", {})
        record = {
            "format": FORMAT,
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint["id"],
            "parent_checkpoint_id": parent,
            "metadata": self._encode(metadata, ns_dir),
            "checkpoint": self._encode(checkpoint, ns_dir),
            "channel_values": {name: self._encode(value, ns_dir) for name, value in values.items() if name in versions},
        }
        namespace = folders.ready(ns_dir, create=True)
        assert namespace is not None  # noqa: S101 -- made just now
        layers = {} if self.opaque else layers_of_state(values, self.layers)
        with namespace.store.locked():
            # LangGraph's parent by its file too (the envelope's parent is the seal chain, in save order)
            record["parent_generation"] = namespace.generation_of(parent) if parent else None
            record["order"] = order = namespace.order()
            stored = record["channel_values"]  # a large value in a blob of its own, written first
            record["channel_values"] = {name: stash(folders.root, namespace.path, v) for name, v in stored.items()}
            receipt = namespace.store.save({**layers, "state": {"data": {"langgraph": record}}})
            namespace.saved(receipt.generation, order, checkpoint["id"])
            name_writes(folders.root, namespace.path, checkpoint["id"], receipt.generation)  # written before the put
        if self.keep is not None:
            namespace.drop_pruned_writes(writes_files)
        return {
            "configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint["id"]}
        }

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes for the checkpoint *config* names, durably: one fdatasync (see ``spares``)."""
        configurable = config["configurable"]
        ns_dir = self.folders.ns_dir(str(configurable["thread_id"]), configurable.get("checkpoint_ns", ""))
        checkpoint_id = configurable["checkpoint_id"]
        records: list[dict[str, Any]] = []
        for index, (channel, value) in enumerate(writes):
            idx = WRITES_IDX_MAP.get(channel, index)
            fields = {"task_id": task_id, "task_path": task_path, "idx": idx, "channel": channel}
            records.append({**fields, "value": self._encode(value, ns_dir)})
        namespace = self.folders.ready(ns_dir, create=True)
        assert namespace is not None  # noqa: S101 -- made just now
        namespace.open_for_writes()
        with namespace.store.locked():
            # named by its checkpoint's generation; by id alone if the put is still to come (async durability)
            generation = namespace.generation_of(checkpoint_id)
            stored = read_checkpoint_writes(namespace.path, checkpoint_id, generation)
            have = {(r["task_id"], r["idx"]) for r in stored if r["idx"] >= 0}
            fresh = [r for r in records if r["idx"] < 0 or (r["task_id"], r["idx"]) not in have]
            for r in fresh:
                r["value"] = stash(self.root, namespace.path, r["value"])
            if fresh:
                path = writes_file(namespace.path, checkpoint_id, generation)
                append_writes(self.root, path, fresh, self.folders.spares)

    # -- removing and copying ------------------------------------------------------------------

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of a thread, in every namespace (under their writers' locks)."""
        threads.delete_thread(self, str(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete every checkpoint (and its writes) whose metadata's ``run_id`` is one of *run_ids*.

        A checkpoint file that does not verify is passed over (its run cannot be read), with a
        :class:`~handoff_files.langgraph.threads.DamagedCheckpointWarning` naming it.
        """
        threads.delete_for_runs(self, run_ids)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest``: keep each namespace's newest checkpoint (and its writes); ``delete``: delete the threads."""
        for thread_id in threads.pruned(thread_ids, strategy, self.delete_thread):
            threads.keep_latest(self, thread_id)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint of a thread, with its id, metadata, values and writes, to a new thread.

        All or nothing: the copy is staged and renamed into place, each source namespace read under
        its writers' lock. A source checkpoint file that does not verify is passed over, with a
        :class:`~handoff_files.langgraph.threads.DamagedCheckpointWarning` naming it.

        :raises HandoffError: if the target thread already holds checkpoints, or appears meanwhile.
        """
        threads.copy_thread(self, str(source_thread_id), str(target_thread_id))
