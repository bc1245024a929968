"""Migration of a file into a thread: an older handoff (0.8, 1.0) rewritten as the next sealed generation.

The original bytes are kept in ``history/`` as ``legacy-…``, then the migrated content is saved
as a save would, with ``lineage.migrated_from``. A sealed file (2.0 or 2.1) is left alone: 2.0 is
read as it stands (2.1 only adds ``seal.signature``), so there is nothing to rewrite.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.format.content import dump_layers
from handoff_files.format.loader import decode
from handoff_files.foundation.atomic import read_bytes, write_durable
from handoff_files.foundation.clock import file_stamp
from handoff_files.thread.head import Head, HeadTracker
from handoff_files.thread.kind import refuse_plain_write
from handoff_files.thread.results import MigrationReport, SaveReceipt
from handoff_files.thread.settings import ThreadSettings

__all__ = ["migrate_file"]


def migrate_file(
    thread: ThreadSettings,
    heads: HeadTracker,
    path: Path,
    *,
    dry_run: bool,
    assume_version: str | None,
    init: Callable[[], object],
    save_locked: Callable[..., SaveReceipt],
) -> MigrationReport:
    """Rewrite the older handoff at *path* as *thread*'s next sealed generation (unless *dry_run*).

    :param heads: the store's record of its thread's head.
    :param init: creates the thread folder.
    :param save_locked: the store's commit under the lock (``layers, head, listing, **how``).
    :raises HandoffError: as :func:`load` does for the file, or as a save does.
    """
    data, _ = read_bytes(path, MAX_FILE_BYTES)
    handoff = decode(data, path, assume_version=assume_version)
    migrated = handoff.lineage.migrated_from
    if handoff.seal is not None or migrated is None:
        return MigrationReport(path, handoff.schema_version, None, (), None, dry_run)
    lineage: dict[str, Any] = handoff.lineage.model_dump(mode="json")
    if dry_run:
        return MigrationReport(path, migrated.schema_version, handoff, tuple(migrated.notes), None, dry_run)
    layers = dump_layers(handoff.content())
    init()
    with thread.lock.held():
        refuse_plain_write(thread.layout, thread.kind, "migrate")  # before the legacy copy is kept
        listing = thread.layout.generations()
        head: Head = heads.current(listing)
        if path.resolve() != thread.primary.resolve():
            # the primary keeps its own bytes (a save keeps a bad or older primary); keep the source's
            kept = thread.layout.kept_copy(f"legacy-{migrated.schema_version}", file_stamp(), f"-{path.name}")
            write_durable(kept, data)
        generation = max(head.generation, handoff.generation) + 1
        _, thread_id = thread.ids(head.agent_id, head.thread_id)
        lineage["migrated_from"]["notes"].append(
            f"sealed by `handoff migrate` as generation {generation} of thread "
            f"{thread_id!r}, which gives it its agent and thread ids"
        )
        receipt = save_locked(layers, head, listing, lineage=lineage, after=handoff.generation, event="migrated")
    return MigrationReport(path, migrated.schema_version, handoff, tuple(migrated.notes), receipt, dry_run)
