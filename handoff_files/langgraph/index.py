"""The index's records: a checkpoint as the index knows it, the head a save chains from, a file that does not verify."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from handoff_files.foundation.errors import HandoffError

__all__ = ["Damaged", "Entry", "MendedCheckpointWarning", "Top"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One checkpoint as the index knows it."""

    checkpoint_id: str
    parent_id: str | None
    metadata: dict[str, Any]  # as stored (encoded), decoded by the saver when it filters
    path: Path  # its sealed file in history/
    generation: int
    blobs: frozenset[str] = frozenset()  # the digests of the blobs its values are in


@dataclass(frozen=True, slots=True)
class Top:
    """What the next save chains its ``order`` from: the newest generation, its checkpoint, the highest id up to it."""

    generation: int
    checkpoint_id: str
    highest_id: str
    #: the id and generation saved just before, by this process (a step's writes come after the next put)
    before: tuple[str, int] | None = None


@dataclass(frozen=True, slots=True)
class Damaged:
    """A checkpoint file that does not verify: its generation (from its name), path and why."""

    generation: int
    path: Path
    error: HandoffError


class MendedCheckpointWarning(UserWarning):
    """A checkpoint file that did not verify was written again from its journal line (the damaged one kept).

    A journal-first ``put`` writes the file unflushed: a power loss may leave it empty or torn while the
    journal line, the commit point, holds it whole. The first read that meets it mends it and says so.
    """
